"""The procs backend end to end over fake Kubernetes programs, run for real.

The fakes (tests/helpers/fake_kube.py) are real processes started through the one
process door, so daemons, ports, readiness, the log, the collected files and the
teardown are the backend's own. Every test ends with nothing left: no process, no
port, no temporary directory, no resources.json entry.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from bisector.backends.base import Candidate, PartialLogs, PrefetchBuilds
from bisector.backends.procs.backend import ProcsBackend
from bisector.backends.procs.stop import tagged
from bisector.collected import METRICS_AFTER, METRICS_BEFORE, read_processes
from bisector.errors import BuildError
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from tests.helpers.processes import listed
from tests.helpers.procs_backend import ProcsWorld, built_of, cluster_of, port_open


def _evaluate(backend: ProcsBackend, candidate: Candidate) -> Measurement:
    return evaluate_candidate(
        backend,
        candidate,
        EvaluationSettings("conflicts", launch_attempts=1, window=WindowRule(real_time=True)),
    )


def test_an_evaluation_measures_the_candidates_own_apiserver_and_leaves_nothing(
    world: ProcsWorld,
) -> None:
    backend = world.backend(warmup_s=2.0)
    backend.setup()
    candidate = world.candidate(2)  # value 9: its apiserver logs nine node PATCH 409s
    seen: dict[str, object] = {}
    real_collect = backend.collect

    def collect(c: Candidate) -> list[Path]:
        running = cluster_of(backend, c.slot)
        seen["tag"] = running.layout.tag
        seen["ports"] = [running.layout.ports.apiserver, running.layout.ports.etcd_client]
        seen["root"] = running.layout.root
        seen["up"] = [port_open(p) for p in seen["ports"]]  # type: ignore[attr-defined]
        return real_collect(c)

    backend.collect = collect  # type: ignore[method-assign,assignment]
    m = _evaluate(backend, candidate)

    assert m.reason is None and m.value == 9
    assert seen["up"] == [True, True]
    log_dir = candidate.log_dir
    assert (log_dir / METRICS_BEFORE).read_text().startswith("apiserver_nodes 3")
    assert (log_dir / METRICS_AFTER).is_file()
    usage = read_processes(log_dir)
    assert {"kube-apiserver", "etcd", "watch-load", "hollow-nodes"} <= set(usage)
    api = usage["kube-apiserver"]
    assert api.cpu_s >= 0 and api.end - api.start >= 1.5 and api.peak_rss_bytes > 0
    load = json.loads((log_dir / "watch-load.json").read_text())
    assert load["opened"] == 5 and load["events"] > 0  # 3 live names get MODIFIED events
    # The hollow nodes are the harness built with its patch, each in its own root dir.
    hollow = (candidate.eval_dir / "cluster" / "hollow-nodes" / "hollow-node-0.log").read_text()
    assert "harness=harness-patched" in hollow and "period=1.0" in hollow
    # Nothing is left: processes, ports, the temporary root, the record.
    assert tagged(str(seen["tag"])) == []
    assert not any(port_open(p) for p in seen["ports"])  # type: ignore[attr-defined]
    assert not Path(str(seen["root"])).exists()
    assert world.leftovers() == []
    assert len(listed(world.kube.pids)) == 1 + 1 + 3  # etcd, apiserver, three hollow nodes


def test_the_backend_offers_early_looks_and_builds_ahead(world: ProcsWorld) -> None:
    backend = world.backend()
    assert isinstance(backend, PartialLogs) and isinstance(backend, PrefetchBuilds)


def test_builds_are_cached_by_tree_and_use_gopath_mode_with_trimpath(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = world.root / "go-calls"
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    backend = world.backend()
    first = world.candidate(2, "wt-a")
    backend.build(first)
    builds = [c for c in calls.read_text().splitlines() if c.startswith("build ")]
    assert len(builds) == 1 and "-o" in builds[0] and "./cmd/kube-apiserver" in builds[0]
    # GOPATH mode: Go runs in GOPATH/src/k8s.io/kubernetes, a link to the worktree.
    assert builds[0].endswith("/src/k8s.io/kubernetes")
    binary = built_of(backend, first.commit).binary
    header = binary.read_text()
    assert "'GO111MODULE': 'off'" in header and "'GOFLAGS': '-trimpath'" in header
    assert "'CGO_ENABLED': '0'" in header and f"COMMIT = {first.commit!r}" in header
    # Another worktree of the same tree: from the cache, no go build.
    again = world.candidate(2, "wt-b")
    backend.build(again)
    assert len([c for c in calls.read_text().splitlines() if c.startswith("build ")]) == 1
    assert built_of(backend, again.commit).binary == binary


def test_a_build_ahead_runs_niced_and_is_found_by_the_evaluation(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = world.root / "go-calls"
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    backend = world.backend()
    ahead = world.candidate(3, "prefetch-0")
    assert not backend.prefetched(ahead.commit)
    backend.prefetch_build(ahead.commit, ahead.worktree)
    assert backend.prefetched(ahead.commit)
    # Its commands and their times are logged (no evaluation's build.log is open then).
    log = backend.work / "prefetch-logs" / f"{ahead.commit[:12]}-build.log"
    assert "go build" in log.read_text() and "exited with code 0 after" in log.read_text()
    candidate = world.candidate(3, "slot-0")
    backend.build(candidate)
    assert len([c for c in calls.read_text().splitlines() if c.startswith("build ")]) == 1


def test_build_fixes_apply_in_their_range_only_and_are_listed(world: ProcsWorld) -> None:
    fix = {
        "name": "add-fixed",
        "why": "the fake apiserver says when it was built with it",
        "command": "echo fixed > FIXED",
        "since": world.repo.mainline[2],
    }
    backend = world.backend(build_fixes=[fix])
    old, new = world.candidate(1, "wt-old", "001"), world.candidate(2, "wt-new", "002")
    backend.build(old)
    backend.build(new)
    assert json.loads((old.eval_dir / "build-fixes.json").read_text()) == []
    listed_fixes = json.loads((new.eval_dir / "build-fixes.json").read_text())
    assert [f["name"] for f in listed_fixes] == ["add-fixed"]
    assert "FIXED = True" in built_of(backend, new.commit).binary.read_text()
    assert "FIXED = False" in built_of(backend, old.commit).binary.read_text()
    # The fix touched the scratch worktree only, never the repository's own checkout.
    assert not (world.repo.path / "FIXED").exists()


def test_a_tree_that_does_not_build_is_a_skip_that_starts_nothing(world: ProcsWorld) -> None:
    (world.root / "broken").mkdir()
    backend = world.backend()
    backend.setup()
    candidate = world.candidate(2)
    (candidate.worktree / "BROKEN").write_text("")
    with pytest.raises(BuildError, match="fake compile error"):
        backend.build(candidate)
    m = _evaluate(backend, candidate)
    assert m.value is None and m.reason is not None and m.reason.startswith("build:")
    assert listed(world.kube.pids) == []
    assert world.leftovers() == []


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ({"FAKE_ETCD_EXIT": "1"}, "etcd exited while waiting for etcd healthy"),
        ({"FAKE_APISERVER_EXIT_AFTER": "0"}, "kube-apiserver exited"),
        ({"FAKE_APISERVER_COMMIT": "f" * 40}, "reports commit 'ffff"),
        # Every hollow node exits; which the launch sees first is a race (they start 25
        # to a bash: under load it saw hollow-node-1).
        ({"FAKE_KUBEMARK_EXIT": "1"}, r"hollow-node-\d+ exited"),
    ],
    ids=["etcd", "apiserver", "wrong-binary", "hollow-node"],
)
def test_a_launch_that_fails_is_a_skip_and_leaves_nothing(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch, fault: dict[str, str], says: str
) -> None:
    for key, value in fault.items():
        monkeypatch.setenv(key, value)
    backend = world.backend()
    backend.setup()
    m = _evaluate(backend, world.candidate(2))
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("launch:") and re.search(says, m.reason), m.reason
    assert world.leftovers() == []


def test_an_apiserver_that_dies_in_the_warmup_is_a_skip(world: ProcsWorld) -> None:
    backend = world.backend(warmup_s=30.0)
    backend.setup()
    candidate = world.candidate(2)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        running = backend.cluster(0)
        if running is not None and running.warmup_start and not slept:
            import os
            import signal

            os.kill(running.pids["kube-apiserver"], signal.SIGKILL)
        if running is not None and running.warmup_start:
            slept.append(seconds)
        import time

        time.sleep(min(seconds, 0.2))

    backend.sleep = sleep
    m = _evaluate(backend, candidate)
    assert m.value is None and m.reason is not None
    assert "kube-apiserver exited during the warmup" in m.reason
    assert world.leftovers() == []


def test_metrics_that_cannot_be_read_at_the_end_are_a_collect_skip(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = world.root / "metrics-off"
    monkeypatch.setenv("FAKE_NO_METRICS_FILE", str(off))
    backend = world.backend()
    backend.setup()
    real = backend.warmup

    def warmup(candidate: Candidate) -> None:
        off.write_text("")
        real(candidate)

    backend.warmup = warmup  # type: ignore[method-assign]
    m = _evaluate(backend, world.candidate(2))
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("collect:") and "/metrics" in m.reason
    assert world.leftovers() == []


def test_processes_that_ignore_sigterm_are_killed_by_the_teardown(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_IGNORE_TERM", "1")
    backend = world.backend(stop_grace="1s")
    backend.setup()
    m = _evaluate(backend, world.candidate(2))
    assert m.value == 9 and m.teardown_error is None
    assert world.leftovers() == []


def test_peek_returns_the_growing_log_and_warmup_steps_add_up(world: ProcsWorld) -> None:
    backend = world.backend(warmup_s=2.0)
    backend.setup()
    candidate = world.candidate(2)
    backend.build(candidate)
    try:
        backend.launch(candidate)
        steps = list(backend.warmup_steps(candidate, 0.4))
        # The first look after one status round with its jitter (1 s x 1.25), then each
        # 0.4 s, the last at the warmup's end.
        assert steps == pytest.approx([1.25, 1.65, 2.0])
        (log,) = backend.peek(candidate)
        assert log == candidate.eval_dir / "cluster" / "kube-apiserver.log"
        assert log.read_text().count(" 409 ") == 9
    finally:
        backend.teardown(candidate)
    assert world.leftovers() == []


def test_plan_prints_every_command_of_an_evaluation(world: ProcsWorld) -> None:
    backend = world.backend()
    text = "\n".join(backend.plan(Candidate("c" * 40, world.root, world.run_dir / "e")))
    for expected in (
        "--storage-backend=etcd3",
        "--insecure-port=<apiserver-port>",
        "--morph=kubelet --name=hollow-node-0",
        "HOLLOW_NODE_STATUS_PERIOD=1s",
        "bisector.backends.procs.load",
        "--watchers 5",
        "bisector.backends.procs.stop --tag",
        "# until 3 hollow-node-* nodes are Ready",
    ):
        assert expected in text, expected


def test_cluster_files_that_cannot_be_written_are_a_launch_skip_not_a_crash(
    world: ProcsWorld,
) -> None:
    # A tmpdir that went away after the settings were read (one that is absent then is
    # refused up front: tests/backends/procs/test_options.py).
    blocker = world.root / "not-a-dir"
    blocker.mkdir()
    backend = world.backend(tmpdir=str(blocker))
    backend.setup()
    blocker.rmdir()
    blocker.write_text("")
    m = _evaluate(backend, world.candidate(2))
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("launch: cannot write the cluster's files"), m.reason
    assert world.leftovers() == []


@pytest.mark.slow
def test_watches_start_from_a_listed_version_and_reopen_when_it_expired(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WATCH_EXPIRE_ONCE", "1")
    backend = world.backend(warmup_s=3.0)
    backend.setup()
    candidate = world.candidate(2)
    m = _evaluate(backend, candidate)
    assert m.value == 9
    load = json.loads((candidate.log_dir / "watch-load.json").read_text())
    # Every first watch (from the listed version) ended with an ERROR event: reopened.
    assert load["opened"] == 5 and load["expired"] == 5 and load["reopened"] >= 5
    assert load["steady_since"] is not None and load["delay_s"]["count"] > 0
    log = (candidate.eval_dir / "cluster" / "kube-apiserver.log").read_text()
    assert "fieldSelector=metadata.name%3Dhollow-node-4&resourceVersion=7:" in log  # 0 nodes yet
    assert world.leftovers() == []


@pytest.mark.slow
def test_a_retried_launch_keeps_the_failed_attempt_and_reads_nothing_of_it(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A status file of the first attempt said all watches were open; the second attempt
    # read it before its own generator wrote one, and measured under a third of the load.
    broken = world.root / "hollow-nodes-fail"
    broken.write_text("")
    monkeypatch.setenv("FAKE_KUBEMARK_EXIT_FILE", str(broken))
    backend = world.backend()
    backend.setup()
    real_launch = backend.launch
    starts: list[float] = []

    def launch(c: Candidate) -> None:
        starts.append(time.time())
        try:
            real_launch(c)
        finally:
            broken.unlink(missing_ok=True)  # the second attempt succeeds

    backend.launch = launch  # type: ignore[method-assign,assignment]
    candidate = world.candidate(2)
    m = evaluate_candidate(backend, candidate, EvaluationSettings("conflicts", launch_attempts=2))
    assert m.value == 9 and m.launch_attempts == 2
    failed = candidate.eval_dir / "cluster.failed-1"
    # Every hollow node of the first attempt exits; which one the launch sees first is a
    # race since they start 25 to a bash (CI, 5 December 2026: hollow-node-1).
    assert re.search(r"hollow-node-\d+ exited", (failed / "launch-error.txt").read_text())
    load = json.loads((candidate.log_dir / "watch-load.json").read_text())
    assert load["started"] >= starts[1]  # this attempt's generator, not the first one's
    assert world.leftovers() == []
