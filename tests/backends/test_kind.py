"""The kind backend through the fake proc: exact commands, directories and order."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.kind import KindBackend
from bisector.backends.kind_steps import parse_version
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import Step
from bisector.config import Section
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.loop_driver import evaluate

COMMIT = "8adc0f0" + "0" * 33
TREE = "b" * 40
TAG = "bisector-" + "b" * 16
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
    fake.on("kube-apiserver-bisector-control-plane", stdout=LOG, first=True)
    return fake


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
        f"kind build node-image {wt} --image kindest/node:{TAG}",
        "make WHAT=cmd/kubemark KUBE_BUILD_PLATFORMS=linux/amd64",
        "cp _output/local/bin/linux/amd64/kubemark cluster/images/kubemark/kubemark",
        f"make build REGISTRY=bisector IMAGE_TAG={TAG}",
        f"kind create cluster --name bisector --image kindest/node:{TAG} "
        f"--config {kdir}/cluster.yaml {kc} --wait 900s",
        "kind get kubeconfig --internal --name bisector",
        f"kind load docker-image bisector/kubemark:{TAG} --name bisector",
        f"kubectl {kc} create namespace kubemark",
        f"kubectl {kc} create secret generic kubeconfig --namespace kubemark "
        f"--from-file=kubelet.kubeconfig={kdir}/hollow.kubeconfig "
        f"--from-file=kubeproxy.kubeconfig={kdir}/hollow.kubeconfig",
        f"kubectl {kc} apply -f {kdir}/hollow-node.yaml",
        f"kubectl {kc} rollout status deployment/hollow-node --namespace kubemark --timeout=900s",
        f"kubectl {kc} logs --namespace kube-system kube-apiserver-bisector-control-plane",
        f"kind delete cluster --name bisector {kc}",
    ]
    cwds = {c.argv[0] + " " + c.argv[1]: c.cwd for c in fake.calls}
    assert cwds["kind build"] == cwds["cp _output/local/bin/linux/amd64/kubemark"] == str(wt)
    assert fake.find("make build")[0].cwd == str(wt / "cluster/images/kubemark")
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
    ran = [_rendered(c) for c in fake.calls if "docker image inspect" not in c.line]
    assert ran == plan


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
    fake.on("kube-apiserver-bisector-control-plane", stdout="", first=True)
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
