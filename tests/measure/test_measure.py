from __future__ import annotations

import time
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.logs import Scores
from bisector.measure.evaluation import Measurement, evaluate_candidate
from tests.helpers.fake_backends import LAUNCH, FakeBackend, ReplayBackend
from tests.helpers.fake_backends import launch_line as _named
from tests.helpers.local_backend import CONFLICT, WRITE


def _candidate(tmp_path: Path) -> Candidate:
    return Candidate("a" * 40, tmp_path, tmp_path / "eval")


def test_measures_the_metric(tmp_path: Path) -> None:
    backend = FakeBackend()
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts", tree="t")
    assert m.value == 5 and m.reason is None
    assert backend.steps == ["build", "launch", "warmup", "collect", "teardown"]
    assert Measurement.from_dict(m.to_dict()) == m


def test_launch_is_retried_with_teardown_between(tmp_path: Path) -> None:
    backend = FakeBackend(launch_failures=2)
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts", launch_attempts=3)
    assert m.value == 5 and m.launch_attempts == 3
    assert backend.steps[:5] == ["build", "launch", "teardown", "launch", "teardown"]
    assert backend.steps[-1] == "teardown"


def test_launch_failing_every_attempt_is_skip(tmp_path: Path) -> None:
    backend = FakeBackend(launch_failures=5)
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts", launch_attempts=2)
    assert m.value is None and m.reason == "launch: no cluster"
    assert backend.steps.count("launch") == 2


def test_build_failure_is_skip_without_launch(tmp_path: Path) -> None:
    backend = FakeBackend(fail="build")
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts")
    assert m.value is None and m.reason == "build: make failed"
    assert backend.steps == ["build"]


V2_LOG = "I0602 05:51:10.000001       7 genericapiserver.go:87] Serving securely on 0.0.0.0:443\n"


@pytest.mark.parametrize(
    ("fail", "lines", "reason"),
    [
        ("collect", V2_LOG, "collect"),
        ("", V2_LOG, "no data"),  # a --v=2 log: no request lines at all
        ("", "no requests\n", "not a kube-apiserver log"),  # a cluster that never came up
    ],
)
def test_collect_failure_and_logs_without_data_are_skip(
    tmp_path: Path, fail: str, lines: str, reason: str
) -> None:
    backend = FakeBackend(fail=fail, lines=lines)
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts")
    assert m.value is None and m.reason is not None
    assert reason in m.reason
    assert backend.steps[-1] == "teardown"


def test_teardown_runs_on_interrupt(tmp_path: Path) -> None:
    backend = FakeBackend(fail="interrupt")
    with pytest.raises(KeyboardInterrupt):
        evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts")
    assert backend.steps[-1] == "teardown"


def test_teardown_failure_is_recorded_not_raised(tmp_path: Path) -> None:
    backend = FakeBackend(fail="teardown")
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts")
    assert m.teardown_error == "delete failed"
    # An infrastructure failure: a skip with the reason, the value kept only for reading.
    assert m.value is None and m.reason == "teardown: delete failed"
    assert m.metrics["value_before_teardown_failed"] == 5


@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), ValueError("bad chunk")])
def test_a_scorer_exception_is_skip_with_teardown(tmp_path: Path, error: Exception) -> None:
    def scorer(_logs: list[str]) -> Scores:
        raise error

    backend = FakeBackend()
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts", scorer=scorer)
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("collect: log cannot be scored") and str(error) in m.reason
    assert backend.steps[-1] == "teardown"


def test_every_phase_keeps_the_output_of_the_commands_any_backend_runs(tmp_path: Path) -> None:
    # A backend that runs commands without naming a log (as gce and kind do): the
    # evaluator files each phase's commands as evals/NNN/<phase>.log (issue 14).
    from bisector import proc
    from bisector.backends.base import Candidate
    from bisector.measure.evaluation import evaluate_candidate
    from tests.helpers.fake_backends import FileValueBackend

    class Shell(FileValueBackend):
        def build(self, candidate: Candidate) -> None:
            proc.run(["sh", "-c", "echo compiling; echo warning >&2"])
            super().build(candidate)

        def launch(self, candidate: Candidate) -> None:
            proc.run(["sh", "-c", "echo cluster up"])

        def teardown(self, candidate: Candidate) -> None:
            proc.run(["sh", "-c", "echo deleting; exit 3"], check=False)

    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "value").write_text("2\n")
    candidate = Candidate("c" * 40, worktree, tmp_path / "evals" / "001")
    evaluate_candidate(Shell(), candidate, metric="conflicts")
    build = (candidate.eval_dir / "build.log").read_text()
    assert "echo compiling" in build and "compiling" in build and "warning" in build
    assert "exited with code 0" in build
    assert "cluster up" in (candidate.eval_dir / "launch.log").read_text()
    teardown = (candidate.eval_dir / "teardown.log").read_text()
    assert "deleting" in teardown and "exited with code 3" in teardown


@pytest.mark.parametrize(
    ("reason", "infra"),
    [
        ("launch: launch failed (exited with code 1): quota exceeded", True),
        ("collect: collect did not write the log to $BISECTOR_LOG", True),
        ("log covers 30s of 10m00s: apiserver restarted or log cut short", True),
        ("checkout: git worktree add failed: fatal: bad object", True),
        ("teardown: gcloud compute instances delete failed", True),
        ("build: build failed (exited with code 2): make: *** [quick-release] Error 2", False),
        ("build: instrument patch does not apply: error: patch failed", False),
        ("build: undefined: wait.PollImmediateTimeout", False),
        ("build: build failed (exited with code 1): cp: No space left on device", True),
        ("build: build failed (timed out after 3600s)", True),
        ("build: build failed (was killed by SIGKILL)", True),
    ],
)
def test_an_infrastructure_skip_is_told_from_a_tree_that_does_not_build(
    reason: str, infra: bool
) -> None:
    """As a journal from before `skipped_at` holds them (the step only in the reason)."""
    old = {"commit": "c", "tree": "t", "phase": "bisect", "reason": reason}
    assert Measurement.from_dict(old).infra_skip is infra
    assert not Measurement.from_dict({**old, "value": 3.0}).infra_skip


def test_the_failed_step_is_a_field_not_the_reason_text() -> None:
    """A launch failure whose message happens to begin `build:` is the infrastructure's
    (it was read as the tree's while the step was the reason's first word)."""
    launch = Measurement("c", "t", "bisect", reason="build: x", skipped_at="launch")
    assert launch.infra_skip
    assert not Measurement("c", "t", "bisect", reason="it broke", skipped_at="build").infra_skip
    written = Measurement.from_dict(launch.to_dict())  # a new journal keeps the field
    assert written.skipped_at == "launch" and written.infra_skip


def test_a_failed_build_is_journaled_with_its_step(tmp_path: Path) -> None:
    backend = FakeBackend(fail="build")
    m = evaluate_candidate(backend, _candidate(tmp_path), metric="conflicts", tree="t",
                           phase="bisect")  # fmt: skip
    assert m.skipped_at == "build" and not m.infra_skip


# -- whose log is it (issue 20, class 2): WindowRule, backend by backend ---------------


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (_named(LAUNCH), None),  # names this launch: its own
        ("", "cannot tell this log is this launch's"),  # names none, 2017 clock
        (_named("feedbeef" * 4), "stale log: it names another launch"),
        (_named(LAUNCH) + _named("feedbeef" * 4), "holds lines of another launch too"),
    ],
    ids=["names-this-launch", "names-none", "names-another", "names-two"],
)
def test_a_replayed_log_is_this_launchs_only_when_it_names_it(
    tmp_path: Path, head: str, reason: str | None
) -> None:
    backend = ReplayBackend(lines=head + (CONFLICT + "\n") * 5 + WRITE + "\n")
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval", 0, LAUNCH)
    m = evaluate_candidate(backend, candidate, metric="conflicts")
    if reason is None:
        assert m.value == 5 and m.reason is None
    else:
        assert m.value is None and m.reason is not None and reason in m.reason


def test_a_log_on_the_wall_clock_must_start_after_its_launch(tmp_path: Path) -> None:
    def line(when: float, status: int) -> str:
        stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(when))
        return (
            f"I{stamp}.000000       7 wrap.go:42] PATCH /api/v1/nodes/n-1/status: (3.1ms) "
            f"{status} [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]\n"
        )

    now = time.time()
    # Starting 5 s before the launch (clock difference) or after it: this launch's. 20 s
    # or 3 hours before: a file an earlier cluster left (within a day: the wall clock).
    for offset, ok in ((-5.0, True), (60.0, True), (-20.0, False), (-3 * 3600.0, False)):
        lines = line(now + offset, 409) * 3 + line(now + 70, 200)
        backend = ReplayBackend(lines=lines)
        m = evaluate_candidate(backend, _candidate(tmp_path / str(offset)), metric="conflicts")
        assert (m.reason is None) is ok, (offset, m.reason)
        if not ok:
            assert m.reason is not None and m.reason.startswith("stale log: it starts")


# -- whose metrics are they: a source metric's files must be this launch's too -----------


class StaleApiserverBackend(ReplayBackend):
    """The log names this launch, but the `/metrics` snapshots (or processes.json) come
    from an apiserver an earlier candidate left up: its teardown `pkill`ed without waiting,
    the new apiserver could not bind :8080, and `curl localhost:8080/metrics` read the old
    one (the same process in both snapshots: a valid window of the wrong commit)."""

    def __init__(self, started: float) -> None:
        super().__init__(lines=_named(LAUNCH) + (CONFLICT + "\n") * 5 + WRITE + "\n")
        self.started = started

    def collect(self, candidate: Candidate) -> list[Path]:
        from bisector.backends.collected import ProcessUsage, write_processes
        from tests.helpers.evidence import counter, snapshot, write_snapshots

        logs = super().collect(candidate)
        name = "apiserver_terminated_watchers_total"
        before = snapshot(counter(name, [({"resource": "nodes"}, 1)]), start_time=self.started)
        after = snapshot(counter(name, [({"resource": "nodes"}, 2)]), start_time=self.started)
        write_snapshots(candidate.log_dir, before, after)
        usage = ProcessUsage("kube-apiserver", 3.0, 1 << 30, self.started, self.started + 60)
        write_processes(candidate.log_dir, [usage])
        return logs


@pytest.mark.parametrize("metric", ["terminated_watchers", "apiserver_cpu_s"])
@pytest.mark.parametrize(("offset", "ok"), [(-600.0, False), (-5.0, True), (30.0, True)])
def test_source_metric_files_of_a_process_older_than_the_launch_are_stale(
    tmp_path: Path, metric: str, offset: float, ok: bool
) -> None:
    from bisector.metric_registry import MetricRegistry

    backend = StaleApiserverBackend(time.time() + offset)
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval", 0, LAUNCH)
    scorer = MetricRegistry().scorer(metric)
    m = evaluate_candidate(backend, candidate, metric=metric, scorer=scorer)
    assert (m.value is not None) is ok, m.reason
    if not ok:
        assert m.reason is not None and m.reason.startswith("stale metrics"), m.reason
