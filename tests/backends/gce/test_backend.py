"""The gce backend through the fake proc: exact commands, directories, env and order."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.gce import capacity as gce_capacity
from bisector.backends.gce import steps as gce_steps
from bisector.backends.gce.backend import RELEASE_OUTPUTS, SERVER_TARBALL, GceBackend
from bisector.backends.instrument import DISPATCH_PROGRESS, PATCH_DIR, apply_patch
from bisector.backends.registry import create_backend
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import Step
from bisector.config import Section
from bisector.errors import BuildError, CollectError, ConfigError, LaunchError
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.loop_driver import evaluate

COMMIT = "7043372d05510b13a0928af92deda6110740dd5e"
TREE = "a" * 40
MASTER = "kubemark-5000-kubemark-master"
# The master apiserver's /metrics over ssh (2017 kubemark masters serve the insecure port).
METRICS = (
    "gcloud compute ssh --project k8s-scale --zone us-central1-b kubemark-5000-kubemark-master "
    "--command 'curl -sSf http://127.0.0.1:8080/metrics'"
)


class Sleeps:
    def __init__(self, interrupt_at: float | None = None) -> None:
        self.calls: list[float] = []
        self.interrupt_at = interrupt_at

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if seconds == self.interrupt_at:
            raise KeyboardInterrupt


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    fake = FakeProc.install(monkeypatch)
    fake.on("rev-parse", stdout=TREE + "\n")
    fake.on("make quick-release", effect=_fake_release)
    fake.on("gcloud compute scp", effect=_fake_logs)
    return fake


def _fake_release(call: Call) -> None:
    """What make quick-release leaves behind: the release tars and the kubemark binary."""
    assert call.cwd is not None
    for rel in RELEASE_OUTPUTS:
        text = Path(rel).name + "\n"
        target = Path(call.cwd) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _fake_logs(call: Call) -> None:
    dest = Path(call.argv[-1])
    (dest / "kube-apiserver.log").write_text("I0602 log\n")
    (dest / "kube-apiserver.log.1.gz").write_bytes(b"gz")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    checkout = tmp_path / "base-checkout"
    (checkout / SERVER_TARBALL).parent.mkdir(parents=True)
    (checkout / SERVER_TARBALL).write_text("release\n")
    return checkout


def _backend(tmp_path: Path, base: Path, sleep: Sleeps, **extra: object) -> GceBackend:
    data: dict[str, object] = {
        "project": "k8s-scale",
        "instance_prefix": "kubemark-5000",
        "base_checkout": str(base),
        "build_cache_dir": str(tmp_path / "cache"),
        **extra,
    }
    context = BackendContext(Section(data, "gce.toml", "backends.gce"), tmp_path / "run", 1800.0)
    return GceBackend(context, sleep=sleep)


def _candidate(tmp_path: Path, name: str = "wt", slot: int = 0) -> Candidate:
    wt = tmp_path / name
    wt.mkdir(exist_ok=True)
    return Candidate(COMMIT, wt, tmp_path / "run" / "evals" / name, slot)


def _rendered(call: Call) -> str:
    return Step(tuple(call.argv), call.cwd, call.env, call.timeout or 0).render()


# The preflight's reads and the 2026 adaptations (gce_preflight, gce_adapt), around the
# scripts: tests of the scripts' order leave them out, tests below check them.
_AROUND = (
    "gcloud compute networks describe", "gcloud compute regions describe",
    "gcloud compute project-info describe", "gcloud artifacts repositories",
    "gcloud compute images describe", "gcloud resource-manager org-policies describe",
    "gcloud storage buckets describe", "sh -c 'command -v cfssl", "gcloud compute networks create",
    "gsutil mb",
    # the teardown's check that each delete of the scripts happened (GceBackend._sweep)
    "kubectl --kubeconfig", "gcloud compute instances delete", "gcloud compute disks delete",
    "gcloud compute addresses delete", "gcloud compute firewall-rules delete",
    "gcloud compute instance-groups managed delete", "gcloud compute instance-templates delete",
    "gcloud compute networks delete", "bash -c 'set -o pipefail",
)  # fmt: skip


def _scripts(fake: FakeProc) -> list[str]:
    return [line for line in fake.lines if not line.startswith(_AROUND)]


def _script_calls(fake: FakeProc) -> list[Call]:
    return [c for c in fake.calls if not c.line.startswith(_AROUND)]


def test_successful_evaluation_runs_the_kubemark_scripts_in_order(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    sleeps = Sleeps()
    backend = _backend(tmp_path, base, sleeps)
    cand = _candidate(tmp_path)
    backend.setup()
    outcome = evaluate(backend, cand)
    backend.close()

    assert outcome.status == "measured"
    assert [p.name for p in outcome.logs] == ["kube-apiserver.log", "kube-apiserver.log.1.gz"]
    assert _scripts(fake) == [
        "./cluster/kube-up.sh",
        f"git rev-parse '{COMMIT}^{{tree}}'",
        "make quick-release",
        "./test/kubemark/start-kubemark.sh",
        METRICS,  # the warmup's start: metrics-before.prom
        METRICS,  # and its end: metrics-after.prom (bisector/collected.py)
        "gcloud compute scp --project k8s-scale --zone us-central1-b "
        f"'{MASTER}:/var/log/kube-apiserver.log*' {cand.log_dir}/",
        "./test/kubemark/stop-kubemark.sh",
        "./cluster/kube-down.sh",
    ]
    up, _, make, start, _, _, _, stop, down = _script_calls(fake)
    assert up.cwd == down.cwd == str(base)
    assert make.cwd == start.cwd == stop.cwd == str(cand.worktree)
    assert up.env["NUM_NODES"] == "80" and up.env["NODE_SIZE"] == "n1-highmem-8"
    assert up.env["KUBE_GCE_INSTANCE_PREFIX"] == "kubemark-5000"
    assert up.env["KUBECONFIG"] == start.env["KUBECONFIG"]
    assert {k: start.env[k] for k in ("PROJECT", "KUBE_GCE_ZONE", "INSTANCE_PREFIX")} == {
        "PROJECT": "k8s-scale",
        "KUBE_GCE_ZONE": "us-central1-b",
        "INSTANCE_PREFIX": "kubemark-5000",
    }
    assert start.env["KUBE_GCE_INSTANCE_PREFIX"] == "kubemark-5000"
    assert start.env["KUBE_GCE_NETWORK"] == up.env["KUBE_GCE_NETWORK"] == "kubemark-5000"
    assert start.env["CONTAINER_REGISTRY"] == "gcr.io"
    assert start.env["KUBEMARK_NUM_NODES"] == start.env["NUM_NODES"] == "5000"
    assert start.env["KUBEMARK_MASTER_SIZE"] == start.env["MASTER_SIZE"] == "n1-standard-64"
    assert start.env["API_SERVER_TEST_LOG_LEVEL"] == "--v=3"
    assert stop.env == start.env
    assert sleeps.calls == [1800.0]
    assert not (tmp_path / "run" / "resources.json").exists()
    # --dry-run prints exactly what ran, in the same order.
    plan = [line for line in backend.plan(cand) if not line.startswith("#")]
    ran = [_rendered(c) for c in _script_calls(fake) if c.argv[0] != "./cluster/kube-up.sh"]
    assert ran == [line for line in plan if "kube-up.sh" not in line and not line.startswith(
        _AROUND)]  # fmt: skip
    assert _rendered(up) in plan
    assert all(_rendered(c) in plan for c in fake.calls if c.line.startswith(_AROUND))


def test_resources_are_recorded_before_they_are_created(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    record = ResourceRecord(tmp_path / "run")
    seen: dict[str, list[str]] = {}
    fake.on("kube-up.sh", effect=lambda c: seen.setdefault("up", record.ids()))
    fake.on("start-kubemark.sh", effect=lambda c: seen.setdefault("start", record.ids()))
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    evaluate(backend, _candidate(tmp_path))
    assert seen == {
        "up": ["gce/base/kubemark-5000"],
        "start": ["gce/base/kubemark-5000", "gce/kubemark/kubemark-5000"],
    }
    assert record.ids() == ["gce/base/kubemark-5000"]  # kept until close()


def test_build_failure_is_a_skip_and_launches_nothing(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    fake.on("make quick-release", code=2, stderr="cacher.go:12: syntax error", first=True)
    backend = _backend(tmp_path, base, Sleeps())
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "skip"
    assert "make quick-release failed for 7043372d0551" in outcome.reason
    assert "syntax error" in outcome.reason
    assert fake.lines == [f"git rev-parse '{COMMIT}^{{tree}}'", "make quick-release"]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_flaky_start_is_cleaned_up_and_retried_with_backoff(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    fake.on(
        "start-kubemark.sh",
        code=1,
        times=1,
        stderr="ERROR: (gcloud.compute.instances.create) Quota 'CPUS' exceeded. Limit: 24.0",
        first=True,
    )
    sleeps = Sleeps()
    backend = _backend(tmp_path, base, sleeps, retry_initial="10s")
    backend.setup()
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "measured"
    scripts = [line for line in fake.lines if "kubemark.sh" in line]
    assert scripts == [
        "./test/kubemark/start-kubemark.sh",
        "./test/kubemark/stop-kubemark.sh",  # clears the half-created master
        "./test/kubemark/start-kubemark.sh",
        "./test/kubemark/stop-kubemark.sh",  # teardown
    ]
    assert sleeps.calls == [10.0, 1800.0]  # backoff, then the warmup


def test_script_error_is_not_retried_and_teardown_still_runs(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    fake.on("start-kubemark.sh", code=1, stderr="line 3: PROJECT: unbound variable", first=True)
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "skip"
    assert outcome.reason.startswith("start-kubemark.sh failed (exited with code 1)")
    assert [line for line in fake.lines if "kubemark.sh" in line] == [
        "./test/kubemark/start-kubemark.sh",
        "./test/kubemark/stop-kubemark.sh",
    ]
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/kubemark-5000"]


def test_interrupt_during_warmup_tears_down_then_propagates(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    backend = _backend(tmp_path, base, Sleeps(interrupt_at=1800.0))
    backend.setup()
    with pytest.raises(KeyboardInterrupt):
        evaluate(backend, _candidate(tmp_path))
    assert _scripts(fake)[-3:] == [
        "./test/kubemark/start-kubemark.sh",
        METRICS,
        "./test/kubemark/stop-kubemark.sh",
    ]
    assert ResourceRecord(tmp_path / "run").ids() == ["gce/base/kubemark-5000"]


def test_interrupt_during_launch_tears_down(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    fake.on("start-kubemark.sh", raises=KeyboardInterrupt(), first=True)
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    with pytest.raises(KeyboardInterrupt):
        evaluate(backend, _candidate(tmp_path))
    assert _scripts(fake)[-1] == "./test/kubemark/stop-kubemark.sh"
    assert "gcloud compute scp" not in " ".join(fake.lines)


def test_second_evaluation_of_the_same_tree_reuses_the_build(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    assert evaluate(backend, _candidate(tmp_path, "wt1")).status == "measured"
    second = _candidate(tmp_path, "wt2")
    assert evaluate(backend, second).status == "measured"
    assert fake.lines.count("make quick-release") == 1
    assert fake.lines.count(f"git rev-parse '{COMMIT}^{{tree}}'") == 2
    for rel in RELEASE_OUTPUTS:
        assert (second.worktree / rel).read_text() == Path(rel).name + "\n"
    assert fake.find("start-kubemark.sh")[1].cwd == str(second.worktree)


def test_parallel_slot_gets_its_own_base_cluster_and_names(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    evaluate(backend, _candidate(tmp_path, "wt1", slot=1))
    ups = fake.find("kube-up.sh")
    assert [c.env["KUBE_GCE_INSTANCE_PREFIX"] for c in ups] == ["kubemark-5000", "kubemark-5000-1"]
    start = fake.find("start-kubemark.sh")[0]
    assert start.env["INSTANCE_PREFIX"] == "kubemark-5000-1"
    assert start.env["KUBECONFIG"] == ups[1].env["KUBECONFIG"] != ups[0].env["KUBECONFIG"]
    assert (
        "kubemark-5000-1-kubemark-master:/var/log/kube-apiserver.log*" in fake.find("scp")[0].argv
    )


def test_keep_base_cluster_skips_kube_down(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    backend = _backend(tmp_path, base, Sleeps(), keep_base_cluster=True)
    backend.setup()
    backend.close()
    assert _scripts(fake) == ["./cluster/kube-up.sh"]


def test_patch_that_does_not_apply_is_a_skip_saying_so(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    fake.on("git apply --check", code=1, stderr="error: patch failed: cacher.go:571", first=True)
    backend = _backend(tmp_path, base, Sleeps(), instrument_patch=f"builtin:{DISPATCH_PROGRESS}")
    outcome = evaluate(backend, _candidate(tmp_path))
    assert outcome.status == "skip"
    assert (
        "instrumentation patch cacher-dispatch-progress-2017.patch does not apply" in outcome.reason
    )
    patch = str(PATCH_DIR / f"{DISPATCH_PROGRESS}.patch")
    assert fake.lines[1:] == [
        f"git apply --check {patch}",
        f"git apply --check --reverse {patch}",
    ]


def test_patch_is_applied_before_the_build_and_keys_the_cache(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    backend = _backend(tmp_path, base, Sleeps(), instrument_patch=f"builtin:{DISPATCH_PROGRESS}")
    backend.build(_candidate(tmp_path))
    patch = str(PATCH_DIR / f"{DISPATCH_PROGRESS}.patch")
    assert fake.lines[1:] == [
        f"git apply --check {patch}",
        f"git apply {patch}",
        "make quick-release",
    ]
    (entry,) = (tmp_path / "cache").iterdir()
    assert entry.name.startswith(TREE + "-")


def test_missing_base_checkout_and_unknown_keys_are_config_errors(tmp_path: Path) -> None:
    context = BackendContext(Section({"project": "p"}, "gce.toml", "backends.gce"), tmp_path)
    with pytest.raises(ConfigError, match="base_checkout"):
        GceBackend(context).setup()
    bad = BackendContext(
        Section({"project": "p", "zonee": "x"}, "gce.toml", "backends.gce"), tmp_path
    )
    with pytest.raises(ConfigError, match="zonee"):
        create_backend("gce", bad)


# The shipped patch against the 2017 shape of dispatchEvents, with real git.
_CACHER_2017 = """\
\tc.incoming <- *event
}

func (c *Cacher) dispatchEvents() {
\tfor {
\t\tselect {
\t\tcase event, ok := <-c.incoming:
\t\t\tif !ok {
\t\t\t\treturn
\t\t\t}
\t\t\tc.dispatchEvent(&event)
\t\tcase <-c.stopCh:
\t\t\treturn
\t\t}
\t}
}
"""
_CACHER_PATH = "staging/src/k8s.io/apiserver/pkg/storage/cacher.go"


def _git_repo(root: Path, text: str) -> Path:
    (root / _CACHER_PATH).parent.mkdir(parents=True)
    (root / _CACHER_PATH).write_text("package storage\n" + "\n" * 40 + text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_shipped_patch_applies_to_2017_cacher_and_logs_dispatch_progress(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "k8s", _CACHER_2017)
    patch = PATCH_DIR / f"{DISPATCH_PROGRESS}.patch"
    apply_patch(repo, patch, COMMIT, 30)
    patched = (repo / _CACHER_PATH).read_text()
    assert 'glog.Infof("cacher (%v): dispatched event nr %d"' in patched
    assert "dispatched%100 == 0" in patched
    apply_patch(repo, patch, COMMIT, 30)  # a re-used worktree already carries it: no error
    assert (repo / _CACHER_PATH).read_text() == patched


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_shipped_patch_refuses_a_later_cacher(tmp_path: Path) -> None:
    later = _CACHER_2017.replace(
        "\t\t\tc.dispatchEvent(&event)\n",
        "\t\t\tc.dispatchEvent(&event)\n\t\t\tlastRV = event.ResourceVersion\n",
    )
    repo = _git_repo(tmp_path / "k8s", later)
    with pytest.raises(BuildError, match="does not apply to 7043372d0551"):
        apply_patch(repo, PATCH_DIR / f"{DISPATCH_PROGRESS}.patch", COMMIT, 30)


def test_record_survives_as_valid_json(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    cand = _candidate(tmp_path)
    backend.build(cand)
    backend.launch(cand)  # then the process "crashes": no teardown
    data = json.loads((tmp_path / "run" / "resources.json").read_text())
    kubemark = data["resources"][1]
    assert kubemark["teardown"][0]["cmd"] == ["./test/kubemark/stop-kubemark.sh"]
    assert kubemark["teardown"][0]["cwd"] == str(cand.worktree)
    assert kubemark["fallback"][1]["cmd"][:4] == ["gcloud", "compute", "instances", "delete"]


def test_base_release_is_built_when_missing_and_failed_kube_up_is_taken_down(
    fake: FakeProc, tmp_path: Path
) -> None:
    base = tmp_path / "good-endpoint"
    base.mkdir()
    fake.on("kube-up.sh", code=1, times=1, stderr="ERROR: network e2e not ready", first=True)
    data = {"project": "p", "build_cache_dir": str(tmp_path / "cache")}
    context = BackendContext(Section(data, "gce.toml"), tmp_path / "run", 60.0, base_worktree=base)
    backend = GceBackend(context, sleep=Sleeps())
    with pytest.raises(LaunchError, match=r"kube-up\.sh failed"):
        backend.setup()
    assert _scripts(fake) == [
        "git rev-parse HEAD",
        f"git rev-parse '{TREE}^{{tree}}'",
        "make quick-release",
        "./cluster/kube-up.sh",
        "./cluster/kube-down.sh",
    ]
    assert all(c.cwd == str(base) for c in _script_calls(fake))
    assert ResourceRecord(tmp_path / "run").ids() == []
    backend.setup()  # the next attempt: the release is in the checkout now, only kube-up
    assert _scripts(fake)[5:] == ["./cluster/kube-up.sh"]


def test_interrupt_during_kube_up_takes_the_half_built_base_down(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    # Ctrl-C while kube-up.sh runs: the network, firewall rules, address and disk it made
    # so far (seen on the twin) must not be left up until someone runs cleanup.
    fake.on("kube-up.sh", raises=KeyboardInterrupt(), first=True)
    backend = _backend(tmp_path, base, Sleeps())
    with pytest.raises(KeyboardInterrupt):
        backend.setup()
    assert fake.lines[-2:] == ["./cluster/kube-up.sh", "./cluster/kube-down.sh"]
    assert ResourceRecord(tmp_path / "run").ids() == []


# -- facts of the 2017 scripts and CI jobs (each names its source) -------------------


def test_kubemark_master_is_named_after_kube_gce_instance_prefix(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    """hyperhq/kubernetes 7043372 and 1444d25, cluster/gce/config-default.sh:
    `INSTANCE_PREFIX="${KUBE_GCE_INSTANCE_PREFIX:-kubernetes}"`, sourced by
    start-kubemark.sh after cluster/kubemark/gce/config-default.sh, which then sets
    `MASTER_NAME="${INSTANCE_PREFIX}-kubemark-master"`; kubernetes/test-infra f57ef50d,
    scenarios/kubernetes_e2e.py sets INSTANCE_PREFIX, KUBE_GCE_NETWORK and
    KUBE_GCE_INSTANCE_PREFIX to the cluster name."""
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    evaluate(backend, _candidate(tmp_path, "wt1", slot=2))
    start = fake.find("start-kubemark.sh")[0]
    assert start.env["KUBE_GCE_INSTANCE_PREFIX"] == start.env["INSTANCE_PREFIX"]
    assert start.env["KUBE_GCE_INSTANCE_PREFIX"] == "kubemark-5000-2"
    up = fake.find("kube-up.sh")[1]
    assert start.env["KUBE_GCE_NETWORK"] == up.env["KUBE_GCE_NETWORK"] == "kubemark-5000-2"
    assert (
        "kubemark-5000-2-kubemark-master:/var/log/kube-apiserver.log*" in fake.find("scp")[0].argv
    )


def test_build_needs_the_2017_release_layout(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    """hyperhq/kubernetes 7043372: hack/lib/golang.sh lists cmd/kubemark among
    server_test_targets (not in the server tar); start-kubemark.sh finds it with
    hack/lib/util.sh `find-binary-for-platform` (_output/dockerized/bin/linux/amd64);
    cluster/common.sh `find-release-tars` wants the server, salt and (gci) manifests tars."""
    assert set(RELEASE_OUTPUTS) == {
        "_output/release-tars/kubernetes-server-linux-amd64.tar.gz",
        "_output/release-tars/kubernetes-salt.tar.gz",
        "_output/release-tars/kubernetes-manifests.tar.gz",
        "_output/dockerized/bin/linux/amd64/kubemark",
        "_output/dockerized/bin/linux/amd64/kubectl",
    }

    def stage_only(call: Call) -> None:  # kubemark only in the release-stage test tree
        _fake_release(call)
        assert call.cwd is not None
        (Path(call.cwd) / "_output/dockerized/bin/linux/amd64/kubemark").unlink()

    fake.on("make quick-release", effect=stage_only, first=True)
    outcome = evaluate(_backend(tmp_path, base, Sleeps()), _candidate(tmp_path))
    assert outcome.status == "skip"
    assert "left no _output/dockerized/bin/linux/amd64/kubemark" in outcome.reason


def test_parallel_slots_push_the_hollow_node_image_to_their_own_registry_host(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    """hyperhq/kubernetes 7043372, test/kubemark/cloud-provider-config.sh
    (`CONTAINER_REGISTRY="${CONTAINER_REGISTRY:-gcr.io}"`), cluster/images/kubemark/Makefile
    (`gcloud docker -- push $(REGISTRY)/$(PROJECT)/kubemark`) and
    resources/hollow-node_template.yaml (`{{registry}}/{{project}}/kubemark:latest`)."""
    backend = _backend(tmp_path, base, Sleeps())
    hosts = [gce_steps.kubemark_env(backend.cfg, slot)["CONTAINER_REGISTRY"] for slot in range(4)]
    assert hosts == ["gcr.io", "us.gcr.io", "eu.gcr.io", "asia.gcr.io"]
    backend.setup()
    with pytest.raises(ConfigError, match=r"at most 4 parallel slots.*lower \[search\] parallel"):
        evaluate(backend, _candidate(tmp_path, "wt4", slot=4))
    assert not fake.find("start-kubemark.sh")


def test_cleanup_fallback_deletes_the_event_pd(tmp_path: Path, base: Path) -> None:
    """hyperhq/kubernetes 7043372, test/kubemark/gce/util.sh: with EVENT_PD=true (the
    2017 scale job) start-kubemark.sh creates `${MASTER_NAME}-event-pd`."""
    cfg = _backend(tmp_path, base, Sleeps()).cfg
    disks = [s.cmd[4] for s in gce_steps.kubemark_fallback(cfg, 0) if s.cmd[2] == "disks"]
    assert disks == [f"{MASTER}-pd", f"{MASTER}-event-pd"]


@pytest.mark.parametrize(
    "case",
    [
        # test-infra f57ef50d, jobs/ci-kubernetes-kubemark-gce-scale.env: fits
        (80, "n1-highmem-8", 5000, True),
        # jobs/ci-kubernetes-kubemark-500-gce.env: fits (45.3 of 46.8 vCPU)
        (6, "n1-standard-8", 500, True),
        # the config this backend shipped before issue 13: 1.5 TB for 3.7 TB of requests
        (51, "n1-standard-8", 5000, False),
        (5, "n1-standard-8", 500, False),
    ],
)
def test_base_cluster_must_hold_the_hollow_nodes(
    tmp_path: Path, base: Path, case: tuple[int, str, int, bool]
) -> None:
    """Requests from hyperhq/kubernetes 7043372 test/kubemark/resources/hollow-node_template.yaml
    (kubelet 50m/100M, npd 20m/20Mi) and start-kubemark.sh (proxy 20m, 50m above 1000
    nodes, (100*1024 + 100*N) Ki; heapster 80+N/2 m, 200+4N Mi + 200*1024+500N Ki)."""
    nodes, size, hollow, ok = case
    extra = {"num_nodes": nodes, "node_size": size, "kubemark_num_nodes": hollow}
    if ok:
        _backend(tmp_path, base, Sleeps(), **extra)
        return
    with pytest.raises(ConfigError, match=rf"{nodes} x {size} cannot hold {hollow} hollow nodes"):
        _backend(tmp_path, base, Sleeps(), **extra)


def test_capacity_refusal_shows_the_arithmetic(tmp_path: Path, base: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _backend(tmp_path, base, Sleeps(), num_nodes=51, node_size="n1-standard-8")
    assert str(err.value) == (
        "gce.toml: [backends.gce]: 51 x n1-standard-8 cannot hold 5000 hollow nodes "
        "(120m CPU and 738 MB each, plus heapster): CPU 602.6 > 397.8 vCPU; "
        "memory 3,713 GB > 1,632 GB (requests vs capacity less kube-proxy and fluentd on "
        "each node). Raise `num_nodes` or `node_size`, or lower `kubemark_num_nodes`"
    )
    assert gce_capacity.hollow_node_pod(500).millicpu == 90
    with pytest.raises(ConfigError, match="capacity of machine type 'm9-mega-8'"):
        _backend(tmp_path, base, Sleeps(), node_size="m9-mega-8")


def test_env_table_cannot_override_what_the_backend_sets(tmp_path: Path, base: Path) -> None:
    with pytest.raises(ConfigError, match=r"sets NUM_NODES, which the backend sets itself"):
        _backend(tmp_path, base, Sleeps(), env={"NUM_NODES": "10"})
    backend = _backend(tmp_path, base, Sleeps(), env={"EVENT_PD": "true"})
    assert gce_steps.kubemark_env(backend.cfg, 0)["EVENT_PD"] == "true"
    assert gce_steps.base_env(backend.cfg, 0)["EVENT_PD"] == "true"


def test_placeholder_project_is_refused_before_anything_runs(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    backend = _backend(tmp_path, base, Sleeps(), project="my-gcp-project")
    assert any("my-gcp-project" in line for line in backend.plan(_candidate(tmp_path)))
    with pytest.raises(ConfigError, match="'my-gcp-project' is the example's placeholder"):
        backend.setup()
    assert fake.calls == []


def test_credentials_files_end_up_owner_only(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    cand = _candidate(tmp_path)
    kubemark_config = gce_steps.kubemark_kubeconfig(cand.worktree)

    def write_kubemark_config(call: Call) -> None:  # as start-kubemark.sh's heredoc does
        kubemark_config.parent.mkdir(parents=True, exist_ok=True)
        kubemark_config.write_text("users: [{user: {password: admin}}]\n")
        kubemark_config.chmod(0o644)

    fake.on("start-kubemark.sh", effect=write_kubemark_config, first=True)
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    base_config = gce_steps.kubeconfig(backend.cfg, 0)
    assert base_config.stat().st_mode & 0o777 == 0o600
    assert base_config.parent.stat().st_mode & 0o777 == 0o700
    backend.build(cand)
    backend.launch(cand)
    assert kubemark_config.stat().st_mode & 0o777 == 0o600


def test_shipped_configs_mirror_the_june_2017_jobs() -> None:
    """kubernetes/test-infra f57ef50d: jobs/ci-kubernetes-kubemark-gce-scale.env and
    jobs/ci-kubernetes-kubemark-500-gce.env."""
    root = Path(__file__).resolve().parents[3] / "configs"
    want: dict[str, dict[str, object]] = {
        "gce-kubemark-5000.toml": {
            "zone": "us-central1-b", "num_nodes": 80, "node_size": "n1-highmem-8",
            "master_size": "n1-standard-4", "kubemark_num_nodes": 5000,
            "kubemark_master_size": "n1-standard-64",
            "env": {
                "KUBEMARK_MASTER_COMPONENTS_QPS_LIMITS": "--kube-api-qps=100 --kube-api-burst=100",
                "TEST_CLUSTER_MAX_REQUESTS_INFLIGHT":
                    "--max-requests-inflight=1500 --max-mutating-requests-inflight=500",
                "MASTER_DISK_SIZE": "100GB",
                "STORAGE_MEDIA_TYPE": "application/vnd.kubernetes.protobuf",
                "KUBE_NODE_OS_DISTRIBUTION": "gci", "EVENT_PD": "true",
                "KUBEMARK_MASTER_ROOT_DISK_SIZE": "100GB", "USE_REAL_PROXIER": "false",
            },
        },
        "gce-kubemark-500.toml": {
            "zone": "us-central1-f", "num_nodes": 6, "node_size": "n1-standard-8",
            "master_size": "n1-standard-4", "kubemark_num_nodes": 500,
            "kubemark_master_size": "n1-standard-16",
            "env": {
                "KUBEMARK_MASTER_COMPONENTS_QPS_LIMITS": "--kube-api-qps=100 --kube-api-burst=100",
                "KUBE_NODE_OS_DISTRIBUTION": "gci",
            },
        },
    }  # fmt: skip
    for name, values in want.items():
        gce = tomllib.loads((root / name).read_text())["backends"]["gce"]
        for key, value in values.items():
            if isinstance(value, dict):
                assert value.items() <= gce["env"].items(), name
            else:
                assert gce[key] == value, (name, key)


def test_base_cluster_fallback_mirrors_kube_down(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    """What cluster/gce/util.sh kube-down (kubernetes 7043372 and 1444d25) deleted on the
    GCE twin, for a `bisector cleanup` whose base checkout is gone."""
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    (record,) = ResourceRecord(tmp_path / "run").load()
    assert record.teardown[0].cmd == ("./cluster/kube-down.sh",)
    names = [" ".join(s.cmd) for s in record.fallback]
    assert any("instance-groups managed delete kubemark-5000-minion-group" in n for n in names)
    assert any("instance-templates delete kubemark-5000-minion-template" in n for n in names)
    assert any(
        "instances delete kubemark-5000-master" in n and "--delete-disks all" in n for n in names
    )
    rules = {s.cmd[4] for s in record.fallback if s.cmd[2] == "firewall-rules"}
    assert rules == {
        "kubemark-5000-master-https", "kubemark-5000-master-etcd", "kubemark-5000-minion-all",
        "kubemark-5000-default-internal-master", "kubemark-5000-default-internal-node",
        "kubemark-5000-default-ssh",
    }  # fmt: skip
    assert record.fallback[-2].cmd[:2] == ("bash", "-c")  # the route controller's routes
    # A `routes list` that fails (auth, API) fails the step: not "nothing left".
    fake_bin = tmp_path / "failing-gcloud"
    fake_bin.mkdir()
    (fake_bin / "gcloud").write_text("#!/bin/sh\necho 'ERROR: (gcloud) auth' >&2; exit 1\n")
    (fake_bin / "gcloud").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    routes = subprocess.run(record.fallback[-2].cmd, env=env, capture_output=True, check=False)
    assert routes.returncode != 0
    assert names[-1].startswith("gcloud compute networks delete kubemark-5000")
    own = _backend(tmp_path / "own", base, Sleeps(), network="shared-vpc")
    kept = [" ".join(s.cmd) for s in gce_steps.base_fallback(own.cfg, 0)]
    assert not any("networks delete" in n or "default-ssh" in n for n in kept)
    assert "KUBE_DELETE_NETWORK" not in gce_steps.base_env(own.cfg, 0)
    assert gce_steps.base_env(backend.cfg, 0)["KUBE_DELETE_NETWORK"] == "true"


def test_peek_copies_the_live_log_alone_into_its_own_place(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    # Early verdicts (issue 15): during the warmup the run reads the log so far. gce
    # copies the live file (not its rotations) into <eval>/peek, once, no retries.
    backend = _backend(tmp_path, base, Sleeps())
    cand = _candidate(tmp_path)
    logs = backend.peek(cand)
    call = fake.find("gcloud compute scp")[-1]
    assert call.argv[-2] == "kubemark-5000-kubemark-master:/var/log/kube-apiserver.log"
    assert call.argv[-1] == f"{cand.eval_dir / 'peek'}/"
    assert logs == [cand.eval_dir / "peek" / "kube-apiserver.log"]
    assert not cand.log_dir.exists()  # the final log's place is untouched
    steps = list(backend.warmup_steps(cand, 600.0))
    assert steps == [600.0, 1200.0, 1800.0]  # the warmup in steps of check_every


def test_a_failed_peek_is_a_collect_error(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    fake.on("kube-apiserver.log ", code=1, stderr="ssh: connect to host: refused", first=True)
    backend = _backend(tmp_path, base, Sleeps())
    with pytest.raises(CollectError, match="reading the log so far failed"):
        backend.peek(_candidate(tmp_path))


# -- the preflight in `bisector doctor`, against a twin project with low quotas --------------


@pytest.mark.slow
def test_doctor_says_each_quota_shortfall_in_one_line_with_the_numbers_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bisector.commands.doctor import doctor
    from bisector.twin import TwinConfig, install
    from tests.helpers.doctor import gce_home

    gce_home(monkeypatch, tmp_path / "home")
    quotas = {"regions": {"us-central1": {"CPUS": 24, "DISKS_TOTAL_GB": 500}},
              "project": {"NETWORKS": 0}}  # fmt: skip
    home = install(tmp_path / "twin", TwinConfig(project="my-team-scale", quotas=quotas))
    monkeypatch.setenv("PATH", f"{home.bin}{os.pathsep}{os.environ['PATH']}")
    config = tmp_path / "gce.toml"
    text = (Path(__file__).parents[3] / "configs" / "gce-kubemark-500.toml").read_text()
    config.write_text(text.replace('"my-gcp-project"', '"my-team-scale"'))
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    short = [line for line in out.splitlines() if line.startswith("MISSING  preflight quota")]
    assert short == [
        "MISSING  preflight quota CPUS in us-central1: need 68, limit 24, in use 0: 44 short; "
        "ask for more CPUS (https://console.cloud.google.com/iam-admin/quotas?project="
        "my-team-scale, region us-central1), or lower num_nodes, node_size or "
        "kubemark_master_size",
        "MISSING  preflight quota DISKS_TOTAL_GB in us-central1: need 630, limit 500, in use 0: "
        "130 short; ask for more DISKS_TOTAL_GB (https://console.cloud.google.com/iam-admin/"
        "quotas?project=my-team-scale, region us-central1), or lower num_nodes or "
        "NODE_DISK_SIZE in [backends.gce.env]",
        "MISSING  preflight quota NETWORKS: need 1, limit 0, in use 0: 1 short; ask for more "
        "NETWORKS (https://console.cloud.google.com/iam-admin/quotas?project=my-team-scale, "
        "project-wide), or delete an unused network, or name an existing auto-mode one in "
        "`network`",
    ]
    assert "ok       preflight quota IN_USE_ADDRESSES in us-central1: need 8, limit 690" in out
    assert "ok       preflight network kubemark-500: absent; created in auto mode" in out
    assert "ok       preflight image cos-cloud/cos-beta-59-9460-20-0: exists" in out
    assert home.load().leftovers() == {}  # read-only: nothing created
    assert all(c["argv"][-1] != "create" and "create" not in c["argv"] for c in home.calls())


# -- the 2026 adaptations: visible in --dry-run, run when needed, in the report ---------------


def _absent(fake: FakeProc) -> None:
    """The preflight finds no network, no gcr.io repository, no staging bucket."""
    fake.on(
        "gcloud compute networks describe",
        code=1,
        first=True,
        stderr="ERROR: (gcloud.compute.networks.describe) Could not fetch resource:\n"
        " - The resource 'projects/k8s-scale/global/networks/kubemark-5000' was not found",
    )
    fake.on(
        "gcloud artifacts repositories describe",
        code=1,
        first=True,
        stderr="ERROR: (gcloud.artifacts.repositories.describe) NOT_FOUND: Requested entity "
        "was not found.",
    )
    fake.on("gcloud storage buckets describe", code=1, first=True,
            stderr="ERROR: (gcloud.storage.buckets.describe) gs://x not found: 404.")  # fmt: skip


def test_missing_network_registry_and_bucket_are_made_before_kube_up_and_reported(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    _absent(fake)
    backend = _backend(tmp_path, base, Sleeps())
    assert backend.adaptations() == []  # nothing done yet
    record = ResourceRecord(tmp_path / "run")
    seen: list[list[str]] = []
    fake.on("gcloud compute networks create", first=True,
            effect=lambda c: seen.append(record.ids()))  # fmt: skip
    backend.setup()
    made = [line for line in fake.lines if " create " in f" {line} " or "gsutil mb" in line]
    assert made == [
        "gcloud compute networks create kubemark-5000 --project k8s-scale --subnet-mode=auto",
        "gcloud artifacts repositories create gcr.io --repository-format=docker --location us "
        "--project k8s-scale",
        "gsutil mb -b off -p k8s-scale -l us gs://kubernetes-staging-883264db92",
    ]
    assert seen == [["gce/base/kubemark-5000"]]  # recorded (kube-down deletes it) before made
    assert fake.lines.index(made[-1]) < fake.lines.index("./cluster/kube-up.sh")
    up = fake.find("kube-up.sh")[0]
    assert up.env["PATH"].startswith(f"{tmp_path / 'run' / 'gce' / 'bin'}{os.pathsep}")
    wrapper = (tmp_path / "run" / "gce" / "bin" / "gcloud").read_text()
    assert "--timeout=900" in wrapper
    names = [a.name for a in backend.adaptations()]
    assert names == ["network", "registry", "staging bucket", "cfssl", "group wait",
                     "master console"]  # fmt: skip
    plan = "\n".join(backend.plan(_candidate(tmp_path)))
    for line in made:
        assert line in plan  # each adaptation is a visible step of --dry-run
    assert "gcloud compute regions describe us-central1 --project k8s-scale --format=json" in plan


def test_what_exists_is_not_made_again(fake: FakeProc, tmp_path: Path, base: Path) -> None:
    backend = _backend(tmp_path, base, Sleeps())
    backend.setup()
    assert not [line for line in fake.lines if " create " in line or "gsutil mb" in line]


def test_an_adaptation_that_fails_stops_before_kube_up_and_leaves_nothing(
    fake: FakeProc, tmp_path: Path, base: Path
) -> None:
    _absent(fake)
    fake.on("gcloud artifacts repositories create", code=1, first=True,
            stderr="ERROR: (gcloud.artifacts.repositories.create) PERMISSION_DENIED: Permission "
            "'artifactregistry.repositories.create' denied")  # fmt: skip
    backend = _backend(tmp_path, base, Sleeps())
    with pytest.raises(LaunchError, match=r"gcloud artifacts repositories create failed .*"
                       r"PERMISSION_DENIED"):  # fmt: skip
        backend.setup()
    assert "./cluster/kube-up.sh" not in fake.lines
    assert fake.lines[-1] == "./cluster/kube-down.sh"  # the network made just before goes
    assert ResourceRecord(tmp_path / "run").ids() == []


def test_a_run_reports_the_adaptations_of_the_backend_under_its_wrappers() -> None:
    import threading

    from bisector.bisection.report_builder import _adaptations
    from bisector.measure.parallel import CancellableBackend
    from bisector.nightly.budget import BudgetedBackend
    from bisector.nightly.config import Budget
    from bisector.report.adaptation import Adaptation
    from tests.helpers.fake_backends import FileValueBackend

    class Inner(FileValueBackend):
        def adaptations(self) -> list[Adaptation]:
            return [Adaptation("network", "why", ["gcloud compute networks create x"])]

    # as nightly's BudgetedBackend and the slots' CancellableBackend hold it
    wrapped = CancellableBackend(BudgetedBackend(Inner(), Budget()), threading.Event())
    assert _adaptations(wrapped) == Inner().adaptations()
    assert _adaptations(CancellableBackend(FileValueBackend(), threading.Event())) == []


def test_the_report_lists_the_adaptations(tmp_path: Path) -> None:
    from bisector.report.adaptation import Adaptation
    from bisector.report.model import Report
    from bisector.report.render import render_markdown
    from tests.helpers.sample_report import sample_report

    report = sample_report(tmp_path)
    adapted = Report.from_json(
        {**report.to_json(), "adaptations": [
            {"name": "network", "why": "gcloud 528 has no --mode",
             "commands": ["gcloud compute networks create k --subnet-mode=auto"]}]}
    )  # fmt: skip
    assert adapted.adaptations == [
        Adaptation("network", "gcloud 528 has no --mode",
                   ["gcloud compute networks create k --subnet-mode=auto"])
    ]  # fmt: skip
    text = render_markdown(adapted)
    assert "backend added to the scripts" in text
    assert "`gcloud compute networks create k --subnet-mode=auto`" in text
    assert "added to the scripts" not in render_markdown(report)
