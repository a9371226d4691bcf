"""The procs backend's `workload`, its `[[watches]]` load and metrics from etcd's /metrics,
end to end over the fake Kubernetes programs (tests/helpers/fake_kube.py), on both eras:
2017's insecure port and a module-era apiserver serving TLS with a bearer token.

The fake apiserver does what kubernetes #121688 did (staging/src/k8s.io/apiserver/pkg/
storage/cacher/cacher.go at v1.32.0-rc.1, the `WatchFromStorageWithoutResourceVersion`
branch of Watch): on a bad tree a watch without a resourceVersion opens an etcd watch of
its own, so etcd's `etcd_debugging_mvcc_watcher_total` gauge grows by one per watch
(measured on the real binaries: 49 -> 249 for 200 watches, /work/modern/NOTES.md
section 6). etcd serves its /metrics on the client URL (etcd server/embed/etcd.go,
serveClients registers /metrics on every client listener), which the backend snapshots.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.backends.procs import workload as pw
from bisector.backends.procs.backend import ProcsBackend
from bisector.backends.procs.stop import tagged
from bisector.collected import metrics_file
from bisector.config import Section
from bisector.errors import ConfigError
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from bisector.metric_registry import MetricRegistry
from bisector.orphans import start_time
from tests.helpers.procs_backend import ProcsWorld, cluster_of

ERAS = ["insecure", "secure"]  # 2017's insecure port; a module-era apiserver's TLS + token

# Reads what the workload is told, checks the apiserver answers with it, and prints.
_PROBE = r"""
import json, os, ssl, urllib.request
env = {k: v for k, v in os.environ.items() if k.startswith(("BISECTOR_", "KUBECONFIG"))}
request = urllib.request.Request(os.environ["BISECTOR_APISERVER"] + "/version")
tls = None
if "BISECTOR_TOKEN_FILE" in os.environ:
    token = open(os.environ["BISECTOR_TOKEN_FILE"]).read().strip()
    request.add_header("Authorization", f"Bearer {token}")
    tls = ssl.create_default_context(cafile=os.environ["BISECTOR_CA_FILE"])
env["version"] = json.loads(urllib.request.urlopen(request, timeout=10, context=tls).read())
env["cwd"] = os.getcwd()
open(os.path.join(os.environ["BISECTOR_LOG_DIR"], "probe.json"), "w").write(json.dumps(env))
print("workload: the apiserver answered", flush=True)
"""


def _python(code: str, world: ProcsWorld, name: str) -> str:
    script = world.root / f"{name}.py"
    script.write_text(code)
    return f"{sys.executable} {script}"


def _evaluate(backend: ProcsBackend, candidate: Candidate, metric: str) -> Measurement:
    registry = MetricRegistry()
    return evaluate_candidate(
        backend,
        candidate,
        EvaluationSettings(
            metric,
            launch_attempts=1,
            scorer=registry.scorer(metric),
            window=WindowRule(real_time=True),
        ),
    )


@pytest.mark.slow
@pytest.mark.parametrize("serving", ERAS)
def test_a_workload_runs_in_the_warmup_told_the_cluster_and_its_output_is_kept(
    world: ProcsWorld, serving: str
) -> None:
    workload = _python(_PROBE, world, "probe")
    backend = world.backend(warmup_s=2.0, serving=serving, workload=workload)
    backend.setup()
    candidate = world.candidate(2)
    m = _evaluate(backend, candidate, "conflicts")

    assert m.reason is None and m.value == 9
    seen = json.loads((candidate.log_dir / "probe.json").read_text())
    assert seen["version"]["gitCommit"] == candidate.commit  # it reached this apiserver
    assert seen["cwd"] == str(candidate.worktree)
    assert seen["BISECTOR_LOG_DIR"] == str(candidate.log_dir)
    assert seen["BISECTOR_EVAL_DIR"] == str(candidate.eval_dir)
    assert Path(seen["KUBECONFIG"]).name == "kubeconfig"
    assert seen["BISECTOR_APISERVER"].startswith("https://" if serving == "secure" else "http://")
    assert seen["BISECTOR_PROCS_CLUSTER"]  # tagged: the teardown and cleanup find it
    kept = (candidate.log_dir / "workload.log").read_text()
    assert "workload: the apiserver answered" in kept
    assert world.leftovers() == []


@pytest.mark.slow
def test_a_failing_workload_is_a_skip_saying_its_exit_and_first_error(world: ProcsWorld) -> None:
    code = (
        "import sys, time\nprint('creating 100 pods')\n"
        "print('Error: pods \"p-7\" is forbidden: exceeded quota', flush=True)\n"
        "sys.exit(3)\n"
    )
    backend = world.backend(warmup_s=30.0, workload=_python(code, world, "fails"))
    backend.setup()
    m = _evaluate(backend, world.candidate(0), "conflicts")
    assert m.value is None and m.reason is not None
    assert "the workload failed (exit code 3)" in m.reason, m.reason
    assert 'Error: pods "p-7" is forbidden' in m.reason, m.reason
    assert world.leftovers() == []


@pytest.mark.slow
def test_a_workload_that_floods_its_output_fills_no_disk_and_keeps_its_exit(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on a real cluster: `yes` as the workload wrote ~180 MB/s into workload.log for
    # the whole warmup (a 60 s warmup: ~10 GB), and collect copied it into the log
    # directory (twice that): a chatty workload fills the disk. Its log keeps the first
    # WORKLOAD_LOG_BYTES and says how much more it dropped; its exit still decides.
    monkeypatch.setattr(pw, "WORKLOAD_LOG_BYTES", 4000)
    workload = "echo 'Error: first words'; seq 1 200000; exit 3"
    backend = world.backend(warmup_s=30.0, workload=workload)
    backend.setup()
    candidate = world.candidate(0)
    m = _evaluate(backend, candidate, "conflicts")
    assert m.value is None and m.reason is not None
    assert "the workload failed (exit code 3)" in m.reason, m.reason
    assert "Error: first words" in m.reason
    log = candidate.eval_dir / "cluster" / "workload.log"
    text = log.read_text()
    assert log.stat().st_size < 4000 + 200, log.stat().st_size
    assert "more bytes of output dropped: the workload" in text.splitlines()[-1]
    assert world.leftovers() == []


@pytest.mark.slow
def test_a_workload_still_running_at_the_warmups_end_is_stopped(world: ProcsWorld) -> None:
    code = "import time\nprint('holding', flush=True)\ntime.sleep(600)\n"
    backend = world.backend(warmup_s=2.0, workload=_python(code, world, "holds"))
    backend.setup()
    candidate = world.candidate(0)
    pids: list[int] = []
    real_collect = backend.collect

    def collect(c: Candidate) -> list[Path]:
        pid = cluster_of(backend, c.slot).workload
        assert pid is not None
        pids.append(pid)
        found = real_collect(c)
        tag = cluster_of(backend, c.slot).layout.tag
        assert all(p.pid != pid for p in tagged(tag)), "the workload outlived the warmup"
        return found

    backend.collect = collect  # type: ignore[method-assign,assignment]
    m = _evaluate(backend, candidate, "conflicts")
    assert m.reason is None and m.value == 0 and pids
    assert "holding" in (candidate.log_dir / "workload.log").read_text()
    assert world.leftovers() == []


def test_a_workload_child_without_the_tag_is_stopped_by_the_teardown(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collect fails (the workload itself makes the apiserver's /metrics fail), so the
    workload is not stopped there; the teardown stops the cluster by its tag, and the
    workload's child that dropped the tag (`env -i`) with it: it is in the workload's
    process group."""
    broken = world.root / "metrics-off"
    monkeypatch.setenv("FAKE_NO_METRICS_FILE", str(broken))
    pid_file = world.root / "child.pid"
    workload = f"env -i sleep 300 & echo $! > {pid_file}; touch {broken}; wait"
    backend = world.backend(warmup_s=2.0, workload=workload)
    backend.setup()
    m = _evaluate(backend, world.candidate(0), "conflicts")
    assert m.value is None and m.reason is not None
    assert "/metrics cannot be read at the warmup's end" in m.reason, m.reason
    child = int(pid_file.read_text())
    assert start_time(child) is None, "the workload's untagged child outlived the teardown"
    assert world.leftovers() == []


@pytest.mark.slow
def test_a_workload_that_sets_the_length_ends_the_warmup(world: ProcsWorld) -> None:
    slept: list[float] = []
    # 3.5 node status periods of 1 s (the world's): long enough to show the load ran.
    code = "import time\ntime.sleep(3.5)\nprint('done')\n"
    backend = world.backend(
        warmup_s=600.0, workload=_python(code, world, "quick"), workload_ends_warmup=True
    )
    real_sleep = backend.sleep

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        real_sleep(seconds)

    backend.sleep = sleep
    backend.setup()
    candidate = world.candidate(2)
    m = _evaluate(backend, candidate, "conflicts")
    assert m.reason is None and m.value == 9
    # The warmup's sleeps (after the launch's readiness polls) stop well short of 600 s.
    assert sum(slept) < 600.0
    assert world.leftovers() == []


def test_a_workload_that_ends_the_warmup_at_once_is_a_skip_not_a_good_verdict(
    world: ProcsWorld,
) -> None:
    # Found on a real cluster (v1.32, 200 RV-less pod watches): `workload = "true"` with
    # workload_ends_warmup ended the warmup ~1 s in, and the bad commit measured
    # etcd_pod_lists = 0, a good verdict: a window under MIN_LOAD_PERIODS status periods is
    # not judged on the load it carried, so nothing said the load never ran.
    backend = world.backend(warmup_s=600.0, workload="true", workload_ends_warmup=True)
    backend.setup()
    m = _evaluate(backend, world.candidate(0), "conflicts")  # value 0: good-looking
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("collect: the load did not run long enough: the workload"), m.reason
    assert "3 node status periods (3s)" in m.reason
    assert world.leftovers() == []


@pytest.mark.slow
@pytest.mark.parametrize("serving", ERAS)
def test_an_etcd_metric_separates_a_cacher_bypass_under_watches_without_resource_version(
    world: ProcsWorld, serving: str
) -> None:
    """20 pod watches without a resourceVersion, a label each (the #121688 load): the good
    tree's etcd keeps its watchers, the bad tree's has 20 more at the warmup's end."""
    watches = [
        {"resource": "pods", "label_selector": "app=w{i}", "resource_version": "none", "count": 20}
    ]
    values = {}
    for index in (0, 2):  # a good tree, a bad tree
        backend = world.backend(warmup_s=2.0, serving=serving, watches=watches, watchers=0)
        backend.setup()
        candidate = world.candidate(index, f"wt-{index}", f"00{index}")
        m = _evaluate(backend, candidate, "etcd_watchers")
        assert m.reason is None, m.reason
        assert (candidate.log_dir / metrics_file("before", "etcd")).is_file()
        values[index] = m.value
        assert "metrics-after-etcd.prom" in str(m.metrics.get("sources"))
    assert values[0] is not None and values[2] == values[0] + 20
    assert world.leftovers() == []


def test_the_plan_shows_the_workload_and_the_watch_specs(world: ProcsWorld) -> None:
    watches = [{"resource": "apps/v1/deployments", "namespace": "load", "count": 3}]
    backend = world.backend(workload="kubectl apply -f load.yaml", watches=watches)
    text = "\n".join(backend.plan(Candidate("c" * 40, world.root, world.run_dir / "e")))
    assert "kubectl apply -f load.yaml" in text and "BISECTOR_APISERVER=" in text
    assert '"resource":"apps/v1/deployments"' in text and "--watchers 5" in text
    assert "# until 8 watches are open" in text


@pytest.mark.parametrize(
    ("watches", "message"),
    [
        ([{"resource": "Pods", "count": 1}], "write a core resource"),
        ([{"resource": "pods", "count": 0}], "count` must be at least 1"),
        ([{"resource": "pods", "count": 1, "resource_version": "latest"}], "must be one of"),
        ([{"resource": "pods", "count": 1, "selector": "a=b"}], "not a known setting"),
        ([{"resource": "pods", "count": 1 << 20}], "1,048,581 watches in all"),
        ({"resource": "pods"}, "expected \\[\\[backends.procs.watches\\]\\] tables"),
    ],
)
def test_a_bad_watch_table_is_one_line_naming_it(
    world: ProcsWorld, watches: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        world.backend(watches=watches)


def test_a_watch_spec_asks_for_what_it_names() -> None:
    from bisector.backends.procs.load import Target, WatchSpec, specs_of

    section = Section(
        {"resource": "stable.example.com/v1/crontabs", "namespace": "ns1", "count": 2,
         "label_selector": "app=w{i}", "resource_version": "none"},
        "c.toml", "backends.procs.watches[0]",
    )  # fmt: skip
    spec = WatchSpec.from_section(section)
    assert spec.watch_path(7, "99") == (
        "/apis/stable.example.com/v1/namespaces/ns1/crontabs?watch=1&labelSelector=app%3Dw7"
    )
    listed = WatchSpec.from_section(
        Section({"resource": "pods", "count": 1, "timeout_seconds": 10}, "c.toml", "w")
    )
    assert listed.watch_path(0, "5") == "/api/v1/pods?watch=1&resourceVersion=5&timeoutSeconds=10"
    assert spec.list_path() == "/apis/stable.example.com/v1/namespaces/ns1/crontabs"
    node = WatchSpec.nodes(10, 3, "hollow-node-", 2000.0)
    assert node.watch_path(4, "12") == (
        "/api/v1/watch/nodes?fieldSelector=metadata.name%3Dhollow-node-4&resourceVersion=12"
    )
    assert WatchSpec.from_json(spec.to_json()) == spec
    # --pods-without-rv, the load as kubernetes #121688 reported it, is one spec too.
    target = Target("127.0.0.1", 6443, None, "tok")
    line = target.pod_request("w7", 10).decode().splitlines()[0]
    assert line == "GET /api/v1/pods?watch=1&labelSelector=app%3Dw7&timeoutSeconds=10 HTTP/1.1"
    args = argparse.Namespace(
        watchers=3, pods_without_rv=True, prefix="hollow-node-", open_rate=5.0,
        timeout_seconds=10, live=3, watch=[],
    )  # fmt: skip
    (pods,) = specs_of(args)
    assert pods.watch_path(2, "9") == (
        "/api/v1/pods?watch=1&labelSelector=app%3Dhollow-node-2&timeoutSeconds=10"
    )


def test_no_hollow_node_means_none_a_workload_against_the_api_only(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = world.root / "go-calls.txt"
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    workload = _python(_PROBE, world, "probe")
    backend = world.backend(warmup_s=2.0, hollow_nodes=0, watchers=0, workload=workload)
    backend.setup()
    assert backend.harness.kubemark is None  # nothing runs kubemark: it is not built
    candidate = world.candidate(2)
    plan = "\n".join(backend.plan(candidate))
    assert "# no hollow node (hollow_nodes = 0)" in plan and "kubemark" not in plan
    m = _evaluate(backend, candidate, "conflicts")
    assert m.reason is None and m.value == 9, m.reason
    assert not (candidate.eval_dir / "cluster" / "hollow-nodes").exists()
    assert not (candidate.log_dir / "load.json").exists()  # no node load was judged
    assert "workload: the apiserver answered" in (candidate.log_dir / "workload.log").read_text()
    built = calls.read_text()
    assert "./cmd/kube-apiserver" in built and "cmd/kubemark" not in built
    assert world.leftovers() == []


def test_hollow_nodes_below_zero_is_refused_and_zero_is_accepted(world: ProcsWorld) -> None:
    from bisector.backends.procs.options import ProcsSettings

    assert ProcsSettings.from_section(world.section(hollow_nodes=0)).hollow_nodes == 0
    with pytest.raises(ConfigError, match="hollow_nodes"):
        ProcsSettings.from_section(world.section(hollow_nodes=-1))
