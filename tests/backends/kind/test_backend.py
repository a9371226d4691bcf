"""The kind backend through the fake proc: exact commands, directories and order."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.kind import checks as kind_checks
from bisector.backends.kind import steps as ks
from bisector.backends.kind.backend import KindBackend
from bisector.backends.kind.steps import parse_restarts, parse_version, ready_hollow_nodes
from bisector.backends.registry import Finding
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import Step
from bisector.config import Section
from bisector.errors import CollectError, ConfigError, InfraError
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.loop_driver import evaluate

COMMIT = "8adc0f0" + "0" * 33
TREE = "b" * 40
TAG = "bisector-" + "b" * 16
LOGS = "logs --namespace kube-system kube-apiserver-bisector-control-plane"  # the log read
LOG = 'I0625 13:32:12.794864       1 httplog.go:134] "HTTP" verb="PATCH" resp=200\n'


class Sleeps:
    def __init__(self, interrupt: bool = False) -> None:
        self.calls: list[float] = []
        self.interrupt = interrupt

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.interrupt:
            raise KeyboardInterrupt


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    fake = FakeProc.install(monkeypatch)
    fake.on("git describe", stdout="v1.33.1-12-g8adc0f00000000\n")
    fake.on("rev-parse", stdout=TREE + "\n")
    fake.on("docker image inspect", code=1, stderr="Error: No such image")
    fake.on("kind get kubeconfig --internal", stdout="apiVersion: v1\nkind: Config\n")
    fake.on("kubectl --kubeconfig", stdout="")
    fake.on(
        "logs --namespace kube-system kube-apiserver-bisector-control-plane", stdout=LOG, first=True
    )
    fake.on("get nodes --no-headers", stdout=_nodes(ready=50), first=True)
    fake.on("restartCount", stdout="0", first=True)
    return fake


def _nodes(ready: int, not_ready: int = 0) -> str:
    """`kubectl get nodes --no-headers` of the kind node and some hollow nodes."""
    lines = ["bisector-control-plane   Ready    control-plane   5m    v1.33.1"]
    lines += [f"hollow-node-7c9f-{i:05d}   Ready    <none>   1m    v1.33.1" for i in range(ready)]
    lines += [
        f"hollow-node-7c9f-x{i:04d}   NotReady    <none>   1m    v1.33.1" for i in range(not_ready)
    ]
    return "\n".join(lines) + "\n"


def _backend(tmp_path: Path, sleep: Sleeps, **extra: object) -> KindBackend:
    section = Section({"hollow_nodes": 50, **extra}, "kind.toml", "backends.kind")
    return KindBackend(BackendContext(section, tmp_path / "run", 600.0), sleep=sleep)


def _candidate(tmp_path: Path) -> Candidate:
    wt = tmp_path / "wt"
    wt.mkdir(exist_ok=True)
    return Candidate(COMMIT, wt, tmp_path / "run" / "evals" / "e1")


def _rendered(call: Call) -> str:
    return Step(tuple(call.argv), call.cwd, call.env, call.timeout or 0).render()


def test_successful_evaluation(fake: FakeProc, tmp_path: Path) -> None:
    sleeps = Sleeps()
    backend = _backend(tmp_path, sleeps)
    cand = _candidate(tmp_path)
    outcome = evaluate(backend, cand)
    assert outcome.status == "measured", outcome.reason
    wt, kdir = cand.worktree, cand.eval_dir / "kind"
    kc = f"--kubeconfig {kdir}/kubeconfig"
    assert fake.lines == [
        f"git describe --tags --match 'v[0-9]*' --abbrev=14 {COMMIT}",
        f"git rev-parse '{COMMIT}^{{tree}}'",
        f"docker image inspect --format '{{{{.Id}}}}' kindest/node:{TAG}",
        f"kind build node-image {wt} --image kindest/node:{TAG} --arch amd64",
        "build/run.sh make all WHAT=cmd/kubemark KUBE_BUILD_PLATFORMS=linux/amd64",
        "cp _output/dockerized/bin/linux/amd64/kubemark cluster/images/kubemark/kubemark",
        f"docker build --pull --platform=linux/amd64 -t bisector/kubemark:{TAG} .",
        f"kind create cluster --name bisector --image kindest/node:{TAG} "
        f"--config {kdir}/cluster.yaml {kc} --wait 900s",
        "kind get kubeconfig --internal --name bisector",
        f"kind load docker-image bisector/kubemark:{TAG} --name bisector",
        f"kubectl {kc} create namespace kubemark",
        f"kubectl {kc} create secret generic kubeconfig --namespace kubemark "
        f"--from-file=kubelet.kubeconfig={kdir}/hollow.kubeconfig "
        f"--from-file=kubeproxy.kubeconfig={kdir}/hollow.kubeconfig "
        f"--from-file=npd.kubeconfig={kdir}/hollow.kubeconfig",
        f"kubectl {kc} apply -f {kdir}/hollow-node.yaml",
        f"kubectl {kc} rollout status deployment/hollow-node --namespace kubemark --timeout=900s",
        f"kubectl {kc} get nodes --no-headers",
        f"kubectl {kc} get pod --namespace kube-system kube-apiserver-bisector-control-plane "
        f"-o 'jsonpath={{.status.containerStatuses[*].restartCount}}'",
        f"kubectl {kc} get --raw /metrics",  # at the warmup's start
        f"kubectl {kc} get --raw /metrics",  # and at its end (metrics-before/after.prom)
        f"kubectl {kc} logs --namespace kube-system kube-apiserver-bisector-control-plane",
        f"kubectl {kc} get pod --namespace kube-system kube-apiserver-bisector-control-plane "
        f"-o 'jsonpath={{.status.containerStatuses[*].restartCount}}'",
        f"kind delete cluster --name bisector {kc}",
    ]
    cwds = {c.argv[0] + " " + c.argv[1]: c.cwd for c in fake.calls}
    assert cwds["kind build"] == cwds["cp _output/dockerized/bin/linux/amd64/kubemark"] == str(wt)
    assert cwds["build/run.sh make"] == str(wt)
    assert fake.find("docker build")[0].cwd == str(wt / "cluster/images/kubemark")
    config = (kdir / "cluster.yaml").read_text()
    assert 'extraArgs:\n      v: "3"' in config and "containerLogMaxSize" in config
    manifest = (kdir / "hollow-node.yaml").read_text()
    assert "replicas: 50" in manifest and f"image: bisector/kubemark:{TAG}" in manifest
    assert "--name=$(NODE_NAME)" in manifest
    assert "kubernetes.io/hostname: bisector-control-plane" in manifest
    assert (kdir / "hollow.kubeconfig").read_text().startswith("apiVersion: v1")
    assert outcome.logs == [cand.log_dir / "kube-apiserver.log"]
    assert outcome.logs[0].read_text() == LOG
    assert sleeps.calls == [600.0]
    assert ResourceRecord(tmp_path / "run").ids() == []
    plan = [line.split(" > ")[0] for line in backend.plan(cand) if not line.startswith("#")]
    polled = ("docker image inspect", "get nodes --no-headers")  # plan comments say these
    ran = [_rendered(c) for c in fake.calls if not any(p in c.line for p in polled)]
    assert ran == plan
    assert any(line.startswith("# until 50 hollow-node-* nodes are Ready (every 10s")
               for line in backend.plan(cand))  # fmt: skip


def test_candidate_too_old_for_kind_is_a_skip_before_any_build(
    fake: FakeProc, tmp_path: Path
) -> None:
    fake.on("git describe", stdout="v1.7.0-alpha.4-123-g7043372d05510b\n", first=True)
    outcome = evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip"
    assert "Kubernetes v1.7.0-alpha.4-123-g7043372d05510b, too old for kind" in outcome.reason
    assert "needs >= v1.15" in outcome.reason
    assert fake.lines == [f"git describe --tags --match 'v[0-9]*' --abbrev=14 {COMMIT}"]


def test_commit_without_version_tag_is_a_skip(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("git describe", code=128, stderr="fatal: No names found", first=True)
    outcome = evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip"
    assert "cannot tell the Kubernetes version" in outcome.reason
    assert len(fake.calls) == 1


def test_images_of_the_same_tree_are_reused(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("docker image inspect", stdout="sha256:1\n", first=True)
    backend = _backend(tmp_path, Sleeps())
    backend.build(_candidate(tmp_path))
    assert [c.argv[:2] for c in fake.calls] == [
        ["git", "describe"],
        ["git", "rev-parse"],
        ["docker", "image"],
        ["docker", "image"],
    ]


def test_build_failure_is_a_skip_and_creates_no_cluster(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("kind build node-image", code=1, stderr="go build failed", first=True)
    outcome = evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip" and "go build failed" in outcome.reason
    assert not any("create" in line or "delete" in line for line in fake.lines)


def test_flaky_create_is_deleted_and_retried(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("kind create cluster", code=1, times=1, first=True,
            stderr="ERROR: failed to create cluster: connection reset by peer")  # fmt: skip
    sleeps = Sleeps()
    outcome = evaluate(_backend(tmp_path, sleeps), _candidate(tmp_path))
    assert outcome.status == "measured"
    kind = [" ".join(c.argv[:3]) for c in fake.calls if c.argv[0] == "kind"]
    assert kind[1:4] == ["kind create cluster", "kind delete cluster", "kind create cluster"]
    assert kind[-1] == "kind delete cluster"
    assert sleeps.calls == [10.0, 600.0]


def test_interrupt_during_warmup_deletes_the_cluster(fake: FakeProc, tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        evaluate(_backend(tmp_path, Sleeps(interrupt=True)), _candidate(tmp_path))
    assert fake.lines[-1] == (
        f"kind delete cluster --name bisector --kubeconfig {tmp_path}/run/evals/e1/kind/kubeconfig"
    )
    assert ResourceRecord(tmp_path / "run").ids() == []


def test_empty_apiserver_log_is_a_collect_skip(fake: FakeProc, tmp_path: Path) -> None:
    fake.on(
        "logs --namespace kube-system kube-apiserver-bisector-control-plane", stdout="", first=True
    )
    outcome = evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip" and "log is empty" in outcome.reason
    assert fake.lines[-1].startswith("kind delete cluster")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.7.0-alpha.4-123-g7043372d05510b", (1, 7)),
        ("v1.15.0", (1, 15)),
        ("1.33", (1, 33)),
        ("nightly", None),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_version(text) == expected


# -- credentials -------------------------------------------------------------------
def test_kubeconfigs_bisector_writes_are_owner_only(fake: FakeProc, tmp_path: Path) -> None:
    """Both kubeconfigs are cluster-admin credentials (kind's --internal one included)."""
    cand = _candidate(tmp_path)
    kdir = cand.eval_dir / "kind"
    kdir.mkdir(parents=True)
    kdir.chmod(0o755)
    (kdir / "hollow.kubeconfig").write_text("stale")
    (kdir / "hollow.kubeconfig").chmod(0o644)  # left by an earlier attempt
    old_umask = os.umask(0o022)
    try:
        backend = _backend(tmp_path, Sleeps())
        backend.build(cand)
        backend.launch(cand)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(kdir.stat().st_mode) == 0o700
    hollow = kdir / "hollow.kubeconfig"
    assert stat.S_IMODE(hollow.stat().st_mode) == 0o600
    assert hollow.read_text() == "apiVersion: v1\nkind: Config\n"


# -- peek: the log so far, for early verdicts ------------------------------------------
def test_peek_reads_the_log_so_far_into_its_own_file(fake: FakeProc, tmp_path: Path) -> None:
    sleeps = Sleeps()
    backend = _backend(tmp_path, sleeps)
    cand = _candidate(tmp_path)
    backend.build(cand)
    backend.launch(cand)
    before = len(fake.calls)
    kc = f"{cand.eval_dir}/kind/kubeconfig"
    assert backend.peek(cand) == [cand.eval_dir / "peek" / "kube-apiserver.log"]
    peek_calls = fake.calls[before:]
    assert [c.argv for c in peek_calls] == [
        ["kubectl", "--kubeconfig", kc, "logs", "--namespace", "kube-system",
         "kube-apiserver-bisector-control-plane"],
    ]  # fmt: skip
    assert peek_calls[0].timeout == 600.0  # logs_timeout
    assert (cand.eval_dir / "peek" / "kube-apiserver.log").read_text() == LOG
    assert not (cand.log_dir / "kube-apiserver.log").exists()  # collect's path is untouched
    assert sleeps.calls == []  # the warmup's clock is not the peek's
    # A later peek replaces the file whole (no `.part` left behind).
    fake.on(
        "logs --namespace kube-system kube-apiserver-bisector-control-plane",
        stdout=LOG * 2,
        first=True,
    )
    backend.peek(cand)
    assert (cand.eval_dir / "peek" / "kube-apiserver.log").read_text() == LOG * 2
    assert sorted(p.name for p in (cand.eval_dir / "peek").iterdir()) == ["kube-apiserver.log"]
    # and collect still writes the final log itself.
    assert backend.collect(cand)[0].read_text() == LOG * 2


def test_peek_of_an_empty_log_returns_nothing(fake: FakeProc, tmp_path: Path) -> None:
    fake.on(
        "logs --namespace kube-system kube-apiserver-bisector-control-plane",
        stdout="  \n",
        first=True,
    )
    backend = _backend(tmp_path, Sleeps())
    cand = _candidate(tmp_path)
    assert backend.peek(cand) == []
    assert not (cand.eval_dir / "peek").exists()


def test_failed_peek_is_a_collect_error_without_retries(fake: FakeProc, tmp_path: Path) -> None:
    fake.on(LOGS, code=1, first=True,
            stderr="Error from server: connection refused")  # fmt: skip
    sleeps = Sleeps()
    backend = _backend(tmp_path, sleeps)
    with pytest.raises(CollectError, match="connection refused"):
        backend.peek(_candidate(tmp_path))
    assert len(fake.find("logs")) == 1 and sleeps.calls == []


def test_plan_shows_the_peek_command_as_a_comment(fake: FakeProc, tmp_path: Path) -> None:
    cand = _candidate(tmp_path)
    plan = _backend(tmp_path, Sleeps()).plan(cand)
    assert (
        f"# during the warmup, the log so far: kubectl --kubeconfig {cand.eval_dir}/kind/kubeconfig"
        f" logs --namespace kube-system kube-apiserver-bisector-control-plane"
        f" > {cand.eval_dir}/peek/kube-apiserver.log"
    ) in plan


# -- facts checked against the real kind and kubernetes sources --------------------------
# Flags and positional arguments of the kind subcommands bisector runs, as defined by
# kind v0.11.0 (the oldest kind whose `build node-image` takes the source directory as
# an argument: commit a8dcaa80 "move kube-root to args[0], deprecate flag", first in tag
# v0.11.0), kubernetes-sigs/kind pkg/cmd/kind/{build/nodeimage/nodeimage.go,
# create/cluster/createcluster.go, delete/cluster/deletecluster.go,
# get/kubeconfig/kubeconfig.go, load/docker-image/docker-image.go}. The same flags exist
# at kind HEAD fed26882 (where `--kube-root` is gone: 447f3739, v0.26.0, so bisector never
# passes it). Value: (flags, min positional args, max positional args).
KIND_V0_11_CLI = {
    ("build", "node-image"): ({"--image", "--base-image", "--arch"}, 1, 1),
    ("create", "cluster"): ({"--name", "--config", "--image", "--retain", "--wait",
                             "--kubeconfig"}, 0, 0),
    ("delete", "cluster"): ({"--name", "--kubeconfig"}, 0, 0),
    ("get", "kubeconfig"): ({"--name", "--internal"}, 0, 0),
    ("load", "docker-image"): ({"--name", "--nodes"}, 1, 99),
}  # fmt: skip
KIND_BOOL_FLAGS = {"--internal", "--retain"}


def _kind_args(argv: list[str]) -> tuple[tuple[str, str], dict[str, str], list[str]]:
    sub = (argv[1], argv[2])
    flags: dict[str, str] = {}
    positional: list[str] = []
    rest = argv[3:]
    while rest:
        arg = rest.pop(0)
        if arg.startswith("--"):
            flags[arg] = "true" if arg in KIND_BOOL_FLAGS else rest.pop(0)
        else:
            positional.append(arg)
    return sub, flags, positional


def test_every_kind_command_fits_the_kind_v0_11_cli(fake: FakeProc, tmp_path: Path) -> None:
    cand = _candidate(tmp_path)
    backend = _backend(tmp_path, Sleeps())
    evaluate(backend, cand)
    kind_calls = [c.argv for c in fake.calls if c.argv[0] == "kind"]
    assert {(a[1], a[2]) for a in kind_calls} == set(KIND_V0_11_CLI)
    for argv in kind_calls:
        sub, flags, positional = _kind_args(argv)
        known, low, high = KIND_V0_11_CLI[sub]
        assert set(flags) <= known, argv
        assert low <= len(positional) <= high, argv
        if "--wait" in flags:  # a Go time.Duration (DurationVar)
            assert re.fullmatch(r"\d+(ns|us|ms|s|m|h)", flags["--wait"]), argv
    build = next(a for a in kind_calls if a[1] == "build")
    assert build[3] == str(cand.worktree.absolute())  # detectBuildType: a directory is "source"


def test_apiserver_pod_name_follows_kind_and_kubelet_naming(fake: FakeProc, tmp_path: Path) -> None:
    """kind names nodes `<cluster>-<role>` (kubernetes-sigs/kind fed26882
    pkg/cluster/internal/providers/common/namer.go, MakeNodeNamer); the kubelet names a
    static pod's mirror `<pod>-<node>` (hyperhq/kubernetes 49f8b6a
    pkg/kubelet/config/common.go, generatePodName)."""
    cand = Candidate(COMMIT, _candidate(tmp_path).worktree, tmp_path / "run" / "evals" / "e2", 2)
    fake.on(
        "logs --namespace kube-system kube-apiserver-bisector-2-control-plane",
        stdout=LOG,
        first=True,
    )
    backend = _backend(tmp_path, Sleeps())
    backend.collect(cand)
    assert fake.find(" logs ")[0].argv[-1] == "kube-apiserver-bisector-2-control-plane"
    assert fake.find("restartCount")[0].argv[7] == "kube-apiserver-bisector-2-control-plane"
    backend.build(cand)
    backend.launch(cand)
    manifest = (cand.eval_dir / "kind" / "hollow-node.yaml").read_text()
    assert "kubernetes.io/hostname: bisector-2-control-plane" in manifest


def _patches(config: str) -> list[str]:
    """The kubeadmConfigPatches entries of a kind config (literal blocks `- |`)."""
    block = config.split("kubeadmConfigPatches:\n", 1)[1]
    return [p for p in re.split(r"^- \|\n", block, flags=re.MULTILINE) if p.strip()]


def test_kubeadm_patches_are_unversioned_merge_patches(fake: FakeProc, tmp_path: Path) -> None:
    """kind matches a patch without apiVersion against every kubeadm API version
    (kubernetes-sigs/kind fed26882 pkg/internal/patch/resource.go, `matches`): kind
    generates v1beta2 for v1.15-v1.22, v1beta3 for v1.23+ (8fbaace7, v0.12.0) and
    v1beta4 for v1.36+ (22573271, v0.32.0) (pkg/cluster/internal/kubeadm/config.go). For
    a v1beta4 target kind v0.32.0 turns map-form extraArgs into [{name, value}] only
    when the patch has no apiVersion (df0d56c5, pkg/internal/patch/kubeadm_merge.go;
    its test "kubeadm v1beta4 target with unversioned old-style patch")."""
    cand = _candidate(tmp_path)
    backend = _backend(tmp_path, Sleeps(), api_server_verbosity=4, container_log_max_size="2Gi")
    backend.build(cand)
    backend.launch(cand)
    config = (cand.eval_dir / "kind" / "cluster.yaml").read_text()
    assert "\nkind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n" in config
    patches = _patches(config)
    assert [p.splitlines()[0].strip() for p in patches] == [
        "kind: ClusterConfiguration",
        "kind: KubeletConfiguration",
    ]
    assert not any("apiVersion" in p for p in patches)
    assert (
        patches[0] == '  kind: ClusterConfiguration\n  apiServer:\n    extraArgs:\n      v: "4"\n'
    )
    # kubelet.config.k8s.io/v1beta1 KubeletConfiguration field; the kubelet's default is
    # "10Mi" (kubernetes/kubernetes kubelet config v1beta1 defaults.go, SetDefaults_...).
    assert patches[1] == '  kind: KubeletConfiguration\n  containerLogMaxSize: "2Gi"\n'


def test_hollow_node_secret_and_manifest_match_the_real_kubemark(
    fake: FakeProc, tmp_path: Path
) -> None:
    """start-kubemark.sh creates secret `kubeconfig` in namespace `kubemark` with keys
    kubelet.kubeconfig, kubeproxy.kubeconfig and npd.kubeconfig for the hollow node's
    three containers (plus heapster/cluster_autoscaler/dns ones for addons bisector does
    not run): hyperhq/kubernetes 49f8b6a test/kubemark/start-kubemark.sh:347-351 and
    test/kubemark/resources/hollow-node_template.yaml:56,84,105; unchanged in the stored
    kubernetes/kubernetes version of start-kubemark.sh (index id 17575941929). The image
    runs `/kubemark` (cluster/images/kubemark/Dockerfile `COPY kubemark /kubemark`, at
    49f8b6a and at kubernetes/kubernetes 0f8a967b)."""
    cand = _candidate(tmp_path)
    evaluate(_backend(tmp_path, Sleeps()), cand)
    secret = fake.find("create secret generic kubeconfig --namespace kubemark")
    assert len(secret) == 1
    sources = [a.removeprefix("--from-file=") for a in secret[0].argv if a.startswith("--from-")]
    keys = [source.split("=")[0] for source in sources]
    assert keys == ["kubelet.kubeconfig", "kubeproxy.kubeconfig", "npd.kubeconfig"]
    manifest = (cand.eval_dir / "kind" / "hollow-node.yaml").read_text()
    used = set(re.findall(r"/kubeconfig/([\w.]+)", manifest))
    assert used == {"kubelet.kubeconfig", "kubeproxy.kubeconfig"} and used <= set(keys)
    assert "secretName: kubeconfig" in manifest and "namespace: kubemark" in manifest
    assert manifest.count("- /kubemark\n") == 2
    assert "--morph=kubelet" in manifest and "--morph=proxy" in manifest


def test_kubemark_is_built_in_the_build_container_like_kind_builds_the_node(
    fake: FakeProc, tmp_path: Path
) -> None:
    """kind builds a node's binaries with `build/run.sh make all WHAT=...
    KUBE_BUILD_PLATFORMS=linux/<arch>` and takes them from
    `_output/dockerized/bin/linux/<arch>` (kubernetes-sigs/kind fed26882
    pkg/build/nodeimage/internal/kube/builder_docker.go); build/run.sh copies the
    container's output there (hyperhq/kubernetes 49f8b6a build/common.sh,
    LOCAL_OUTPUT_BINPATH). The image is cluster/images/kubemark's `make build` recipe,
    `docker build --pull -t <image> .` (kubernetes/kubernetes 143ac994 Makefile), run
    directly because the Makefile's image name changed (49f8b6a:
    `$(REGISTRY)/$(PROJECT)/kubemark`, no IMAGE_TAG)."""
    cand = _candidate(tmp_path)
    evaluate(_backend(tmp_path, Sleeps()), cand)
    build = fake.find("build/run.sh")[0]
    assert build.argv == [
        "build/run.sh", "make", "all", "WHAT=cmd/kubemark", "KUBE_BUILD_PLATFORMS=linux/amd64",
    ]  # fmt: skip
    assert fake.find("cp ")[0].argv[1] == "_output/dockerized/bin/linux/amd64/kubemark"
    image = fake.find("docker build")[0]
    assert image.argv == [
        "docker", "build", "--pull", "--platform=linux/amd64",
        "-t", f"bisector/kubemark:{TAG}", ".",
    ]  # fmt: skip
    assert fake.find("kind load docker-image")[0].argv[3] == f"bisector/kubemark:{TAG}"


def test_arm64_builds_both_images_for_arm64_under_their_own_tag(
    fake: FakeProc, tmp_path: Path
) -> None:
    """`kind build node-image --arch` (kind 950a3191, v0.11.0) and the kubemark binary
    and image for the same architecture, so the hollow nodes run on the node."""
    cand = _candidate(tmp_path)
    evaluate(_backend(tmp_path, Sleeps(), arch="arm64"), cand)
    tag = TAG + "-arm64"
    assert fake.find("kind build")[0].argv[-4:] == ["--image", f"kindest/node:{tag}", "--arch",
                                                    "arm64"]  # fmt: skip
    assert fake.find("build/run.sh")[0].argv[-1] == "KUBE_BUILD_PLATFORMS=linux/arm64"
    assert fake.find("cp ")[0].argv[1] == "_output/dockerized/bin/linux/arm64/kubemark"
    assert "--platform=linux/arm64" in fake.find("docker build")[0].argv
    assert fake.find("kind load")[0].argv[3] == f"bisector/kubemark:{tag}"
    assert fake.find("kind create")[0].argv[6] == f"kindest/node:{tag}"


def test_an_arch_kind_does_not_build_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"key `backends\.kind\.arch` must be one of amd64, arm64 \(the ones kind "
        r"builds: your docker host's architecture\), got 'x86_64'",
    ):
        _backend(tmp_path, Sleeps(), arch="x86_64")


# -- doctor ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shown", "finding"),
    [
        # kind v0.10.0's `build node-image` has `Args: cobra.NoArgs` (kind v0.10.0
        # pkg/cmd/kind/build/nodeimage/nodeimage.go); v0.11.0 takes the source directory.
        ("kind v0.10.0 go1.15.7 linux/amd64", Finding(False, "kind version",
         "kind v0.10.0 cannot build a node image from a source directory; "
         "install kind >= v0.11.0")),
        ("kind v0.11.0 go1.16.4 linux/amd64",
         Finding(True, "kind version", "v0.11.0 (>= v0.11.0)")),
        ("kind v0.33.0-alpha+fed26882a2f1e3 go1.25 linux/arm64",
         Finding(True, "kind version", "v0.33.0 (>= v0.11.0)")),
    ],
)  # fmt: skip
def test_doctor_checks_the_kind_version(fake: FakeProc, shown: str, finding: Finding) -> None:
    fake.on("kind version", stdout=shown + "\n")
    assert kind_checks.check(Section({}, "kind.toml", "backends.kind"))[0] == finding


def test_doctor_checks_arch_against_the_docker_host(fake: FakeProc) -> None:
    fake.on("kind version", stdout="kind v0.23.0 go1.22 linux/amd64\n")
    fake.on("{{.Server.Arch}}", stdout="arm64\n")
    found = kind_checks.check(Section({}, "kind.toml", "backends.kind"))
    assert found[-1] == Finding(False, "arch", "the docker host is arm64 but `arch` is amd64: "
                                "set arch = 'arm64' in [backends.kind] (node and kubemark "
                                "images must run on this host)")  # fmt: skip
    found = kind_checks.check(Section({"arch": "arm64"}, "kind.toml", "backends.kind"))
    assert found[-1] == Finding(True, "arch", "arm64 (the docker host's)")
    assert fake.find("docker version")[0].argv == [
        "docker", "version", "--format", "{{.Server.Arch}}",
    ]  # fmt: skip


def test_doctor_leaves_unreadable_output_to_the_tool_check(fake: FakeProc) -> None:
    fake.on("kind version", code=1, stderr="boom")
    fake.on("docker version", stdout="")
    assert kind_checks.check(Section({}, "kind.toml", "backends.kind")) == []


# -- hollow nodes registered, not only running -------------------------------------
def test_launch_waits_until_the_hollow_nodes_are_ready(fake: FakeProc, tmp_path: Path) -> None:
    """start-kubemark.sh waits for Ready nodes, not running pods (hyperhq/kubernetes
    49f8b6a test/kubemark/start-kubemark.sh:410-440, `get node | grep -v NotReady`)."""
    fake.on("get nodes --no-headers", stdout=_nodes(ready=10, not_ready=40), times=2, first=True)
    sleeps = Sleeps()
    backend = _backend(tmp_path, sleeps)
    cand = _candidate(tmp_path)
    backend.build(cand)
    backend.launch(cand)
    assert len(fake.find("get nodes --no-headers")) == 3
    assert sleeps.calls == [10.0, 10.0]


def test_too_few_ready_hollow_nodes_is_a_launch_skip(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("get nodes --no-headers", stdout=_nodes(ready=49, not_ready=1), first=True)
    sleeps = Sleeps()
    outcome = evaluate(_backend(tmp_path, sleeps, hollow_ready_timeout="1m"), _candidate(tmp_path))
    assert outcome.status == "skip"
    assert outcome.reason == "only 49 of 50 hollow nodes Ready after 1m00s"
    assert len(fake.find("get nodes --no-headers")) == 7  # at 0, 10, ..., 60 s
    assert sleeps.calls == [10.0] * 6  # never the warmup
    assert fake.lines[-1].startswith("kind delete cluster")


@pytest.mark.parametrize(
    ("output", "ready"),
    [
        (_nodes(ready=3, not_ready=2), 3),
        ("hollow-node-a-1   Ready,SchedulingDisabled   <none>   1m   v1.33.1\n", 1),
        ("bisector-control-plane   Ready   control-plane   5m   v1.33.1\n", 0),
        ("hollow-node-a-1   Unknown   <none>   1m   v1.33.1\n", 0),
        ("", 0),
    ],
)
def test_ready_hollow_nodes_counts_only_ready_hollow_nodes(output: str, ready: int) -> None:
    assert ready_hollow_nodes(output) == ready


# -- an apiserver restart cuts `kubectl logs` short ------------------------------------
def test_apiserver_restart_during_the_run_is_a_collect_skip(fake: FakeProc, tmp_path: Path) -> None:
    """`kubectl logs` returns the current container's log only: a restart during the
    run leaves a log that covers part of it. A restart before the hollow nodes came up
    (kubeadm bootstrap) is fine: the count is compared with the one at launch."""
    fake.on("restartCount", stdout="2", times=1, first=True)  # at collect
    fake.on("restartCount", stdout="1", times=1, first=True)  # at launch
    cand = _candidate(tmp_path)
    outcome = evaluate(_backend(tmp_path, Sleeps()), cand)
    assert outcome.status == "skip"
    assert outcome.reason == (
        "the apiserver restarted during the run (1 -> 2 restarts): its log covers only the time"
        " since"
    )
    assert (cand.eval_dir / "kind" / "apiserver-restarts").read_text() == "1"
    assert not (cand.log_dir / "kube-apiserver.log").exists()


def test_restart_before_launch_ended_is_not_a_skip(fake: FakeProc, tmp_path: Path) -> None:
    fake.on("restartCount", stdout="1", first=True)
    assert evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path)).status == "measured"


@pytest.mark.parametrize("stdout", ["", "Error", "1 x"])
def test_unreadable_restart_count_is_never_a_measurement(
    fake: FakeProc, tmp_path: Path, stdout: str
) -> None:
    fake.on("restartCount", stdout=stdout, first=True)
    outcome = evaluate(_backend(tmp_path, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip"
    assert outcome.reason == f"the apiserver pod's restart count reads {stdout.strip()!r}"


@pytest.mark.parametrize(("text", "count"), [("0", 0), ("3", 3), ("1 2", 3), ("", None)])
def test_parse_restarts(text: str, count: int | None) -> None:
    assert parse_restarts(text) == count


def test_failed_delete_keeps_the_record_and_says_so(fake: FakeProc, tmp_path: Path) -> None:
    backend = _backend(tmp_path, Sleeps())
    cand = _candidate(tmp_path)
    backend.build(cand)
    backend.launch(cand)
    fake.on("kind delete cluster", code=1, stderr="permission denied", first=True)
    with pytest.raises(InfraError, match=r"kind delete cluster bisector failed: permission denied"):
        backend.teardown(cand)
    assert ResourceRecord(tmp_path / "run").ids() == ["kind/cluster/bisector"]


def test_metrics_snapshots_and_a_workload_that_is_the_warmup(
    fake: FakeProc, tmp_path: Path
) -> None:
    fake.on("get --raw /metrics", stdout="process_start_time_seconds 1.7e9\n", first=True)
    sleeps = Sleeps()
    workload = "clusterloader2 --testconfig=load.yaml --report-dir=$BISECTOR_REPORT_DIR"
    backend = _backend(tmp_path, sleeps, workload=workload)
    cand = _candidate(tmp_path)
    outcome = evaluate(backend, cand)
    assert outcome.status == "measured", outcome.reason
    assert not backend.traits.waits_warmup and 600.0 not in sleeps.calls  # no fixed warmup
    (call,) = fake.find("clusterloader2 --testconfig")
    assert call.cwd == str(cand.worktree)
    assert call.env["KUBECONFIG"] == str(cand.eval_dir / "kind" / "kubeconfig")
    assert call.env["BISECTOR_REPORT_DIR"] == str(cand.log_dir / "cl2")
    for name in ("metrics-before.prom", "metrics-after.prom"):
        assert (cand.log_dir / name).read_text() == "process_start_time_seconds 1.7e9\n"


def test_a_failed_workload_is_a_skip_and_a_failed_snapshot_only_leaves_no_file(
    fake: FakeProc, tmp_path: Path
) -> None:
    fake.on("get --raw /metrics", code=1, stderr="Error from server (Forbidden)", first=True)
    fake.on("bash -c", code=2, stderr="clusterloader2: 3 namespaces failed", first=True)
    cand = _candidate(tmp_path)
    outcome = evaluate(_backend(tmp_path, Sleeps(), workload="clusterloader2"), cand)
    assert outcome.status == "skip" and outcome.reason is not None
    assert "workload failed" in outcome.reason and "3 namespaces failed" in outcome.reason
    assert not (cand.log_dir / "metrics-before.prom").exists()


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        # Each was accepted: 0 hollow nodes waited for none, 0 tries ran nothing, a 0s
        # workload timeout failed every warmup.
        ("hollow_nodes", 0, "hollow_nodes` must be at least 1, got 0"),
        ("hollow_nodes", 10**9, "must be at most 5,000 (Kubernetes supports clusters of"),
        ("retry_attempts", 0, "retry_attempts` must be at least 1, got 0"),
        ("workload_timeout", "0s", "workload_timeout` must be more than 0s"),
        ("min_version", "latest", "min_version`: write a version such as v1.15"),
    ],
)
def test_kind_keys_out_of_bounds_are_refused_in_the_jobs_table(
    key: str, value: object, says: str
) -> None:
    section = Section({key: value}, "n.toml", "nightly.jobs[0].backends.kind")
    with pytest.raises(ConfigError) as caught:
        ks.KindSettings.from_section(section)
    assert str(caught.value).startswith(f"n.toml: key `nightly.jobs[0].backends.kind.{key}`")
    assert says in str(caught.value)
