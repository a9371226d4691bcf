"""One evaluation, step by step (bisector.measure.evaluation): what it measures, and
every way it ends as a skip with the reason (a step's failure, a log without data,
another launch's log, a metric read from an earlier process), never as a verdict;
teardown on every path."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import Candidate
from bisector.collected import ProcessUsage, write_processes
from bisector.logs import Scores
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from bisector.metric_registry import MetricRegistry
from tests.helpers.fake_backends import (
    LAUNCH,
    FakeBackend,
    FileValueBackend,
    ReplayBackend,
    SourceBackend,
)
from tests.helpers.fake_backends import launch_line as _named
from tests.helpers.inprocess import bisect_built
from tests.helpers.local_backend import CONFLICT, WRITE
from tests.helpers.repo import build_repo


def _candidate(tmp_path: Path) -> Candidate:
    return Candidate("a" * 40, tmp_path, tmp_path / "eval")


def test_measures_the_metric(tmp_path: Path) -> None:
    backend = FakeBackend()
    m = evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts", tree="t"))
    assert m.value == 5 and m.reason is None
    assert backend.steps == ["build", "launch", "warmup", "collect", "teardown"]
    assert Measurement.from_dict(m.to_dict()) == m


def test_launch_is_retried_with_teardown_between(tmp_path: Path) -> None:
    backend = FakeBackend(launch_failures=2)
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", launch_attempts=3)
    )
    assert m.value == 5 and m.launch_attempts == 3
    assert backend.steps[:5] == ["build", "launch", "teardown", "launch", "teardown"]
    assert backend.steps[-1] == "teardown"


def test_launch_failing_every_attempt_is_skip(tmp_path: Path) -> None:
    backend = FakeBackend(launch_failures=5)
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", launch_attempts=2)
    )
    assert m.value is None and m.reason == "launch: no cluster"
    assert backend.steps.count("launch") == 2


def test_build_failure_is_skip_without_launch(tmp_path: Path) -> None:
    backend = FakeBackend(fail="build")
    m = evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"))
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
    m = evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"))
    assert m.value is None and m.reason is not None
    assert reason in m.reason
    assert backend.steps[-1] == "teardown"


def test_teardown_runs_on_interrupt(tmp_path: Path) -> None:
    backend = FakeBackend(fail="interrupt")
    with pytest.raises(KeyboardInterrupt):
        evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"))
    assert backend.steps[-1] == "teardown"


def test_teardown_failure_is_recorded_not_raised(tmp_path: Path) -> None:
    backend = FakeBackend(fail="teardown")
    m = evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"))
    assert m.teardown_error == "delete failed"
    # An infrastructure failure: a skip with the reason, the value kept only for reading.
    assert m.value is None and m.reason == "teardown: delete failed"
    assert m.metrics["value_before_teardown_failed"] == 5


@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), ValueError("bad chunk")])
def test_a_scorer_exception_is_skip_with_teardown(tmp_path: Path, error: Exception) -> None:
    def scorer(_logs: list[str]) -> Scores:
        raise error

    backend = FakeBackend()
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", scorer=scorer)
    )
    assert m.value is None and m.reason is not None
    assert m.reason.startswith("collect: log cannot be scored") and str(error) in m.reason
    assert backend.steps[-1] == "teardown"


def test_every_phase_keeps_the_output_of_the_commands_any_backend_runs(tmp_path: Path) -> None:
    # A backend that runs commands without naming a log (as gce and kind do): the
    # evaluator files each phase's commands as evals/NNN/<phase>.log (issue 14).
    from bisector import proc
    from bisector.backends.base import Candidate
    from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate

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
    evaluate_candidate(Shell(), candidate, EvaluationSettings("conflicts"))
    build = (candidate.eval_dir / "build.log").read_text()
    assert "echo compiling" in build and "compiling" in build and "warning" in build
    assert "exited with code 0" in build
    assert "cluster up" in (candidate.eval_dir / "launch.log").read_text()
    teardown = (candidate.eval_dir / "teardown.log").read_text()
    assert "deleting" in teardown and "exited with code 3" in teardown


def test_a_failed_build_is_journaled_with_its_step(tmp_path: Path) -> None:
    backend = FakeBackend(fail="build")
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", phase="bisect", tree="t")
    )
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
    m = evaluate_candidate(backend, candidate, EvaluationSettings("conflicts"))
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
        m = evaluate_candidate(
            backend, _candidate(tmp_path / str(offset)), EvaluationSettings("conflicts")
        )
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
    m = evaluate_candidate(backend, candidate, EvaluationSettings(metric, scorer=scorer))
    assert (m.value is not None) is ok, m.reason
    if not ok:
        assert m.reason is not None and m.reason.startswith("stale metrics"), m.reason


# -- a metric read from beside the log: the evaluation's own log directory ---------------
# An evaluation scores a source metric from its own log directory; a missing or garbled
# file there is a skip with the reason, never a value.


def _evaluate(tmp_path: Path, files: str, metric: str) -> Measurement:
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    scorer = MetricRegistry().scorer(metric)
    return evaluate_candidate(
        SourceBackend(files),
        candidate,
        EvaluationSettings(metric, scorer=scorer, window=WindowRule()),
    )


def test_source_metrics_come_from_the_evaluations_log_dir(tmp_path: Path) -> None:
    m = _evaluate(tmp_path / "a", "prom cl2 procs", "terminated_watchers")
    assert m.value == 7.0 and m.reason is None
    assert m.metrics["conflicts"] == 3  # the log is scored too (its window is judged)
    assert m.metrics["sources"]["terminated_watchers"]["source"] == "prometheus"
    assert (
        str(tmp_path / "a" / "eval" / "logs" / "metrics-after.prom")
        in (m.metrics["sources"]["terminated_watchers"]["from"])
    )
    assert _evaluate(tmp_path / "b", "cl2", "scheduling_throughput").value == 77.0
    assert _evaluate(tmp_path / "c", "procs", "apiserver_cpu_s").value == 33.0


def test_missing_or_garbled_source_files_are_a_skip_with_the_reason(tmp_path: Path) -> None:
    m = _evaluate(tmp_path / "a", "cl2", "terminated_watchers")
    assert m.value is None and m.reason is not None
    assert (
        m.reason.startswith("collect: no metrics snapshot at") and "metrics-after.prom" in m.reason
    )
    m = _evaluate(tmp_path / "b", "prom garbled", "terminated_watchers")
    assert m.value is None and m.reason is not None and "not Prometheus text format" in m.reason
    m = _evaluate(tmp_path / "c", "prom", "pod_startup_p99_ms")
    assert m.value is None and m.reason is not None and "no CL2 report directory" in m.reason
    m = _evaluate(tmp_path / "d", "prom", "apiserver_cpu_s")
    assert m.value is None and m.reason is not None and "no process measurements" in m.reason


# -- a backend step's OSError or failed command: that step's skip, once for every backend ---
# mozregression's Launcher.start turns whatever a launcher raises into one LauncherError;
# here the driver turns what a backend's step lets out (an OSError: a full disk, a file
# gone; a CommandError: a command that failed and no clause of the backend's caught it)
# into that step's skip, so no backend needs a clause of its own to keep it from ending
# the run, and none can make it a verdict.

FAILURES = {
    "oserror": OSError(errno.ENOSPC, "No space left on device"),
    "command": proc.CommandError(["kubectl", "apply", "-f", "x.yaml"], 1, "", "unreachable"),
}
# The step each backend step's failure is said as (Measurement.skipped_at); the warmup
# that failed gave no log to collect.
SAID_AS = {"build": "build", "launch": "launch", "warmup": "collect", "collect": "collect"}


class RaisingBackend(FakeBackend):
    """FakeBackend whose `step` raises `error` its first `times` calls, as a backend with
    no except clause of its own would let it out."""

    def __init__(self, step: str, error: Exception, times: int = 1_000) -> None:
        super().__init__()
        self.step, self.error, self.times = step, error, times

    def _maybe_raise(self, step: str) -> None:
        if step == self.step and self.times > 0:
            self.times -= 1
            raise self.error

    def build(self, candidate: Candidate) -> None:
        super().build(candidate)
        self._maybe_raise("build")

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        self._maybe_raise("launch")

    def warmup(self, candidate: Candidate) -> None:
        super().warmup(candidate)
        self._maybe_raise("warmup")

    def collect(self, candidate: Candidate) -> list[Path]:
        logs = super().collect(candidate)
        self._maybe_raise("collect")
        return logs

    def teardown(self, candidate: Candidate) -> None:
        super().teardown(candidate)
        self._maybe_raise("teardown")


class NothingUp(EvaluationHooks):
    def __init__(self) -> None:
        self.said = False

    def nothing_up(self) -> None:
        self.said = True


@pytest.mark.parametrize("kind", sorted(FAILURES))
@pytest.mark.parametrize("step", sorted(SAID_AS))
def test_a_steps_oserror_or_failed_command_is_that_steps_skip(
    tmp_path: Path, step: str, kind: str
) -> None:
    error = FAILURES[kind]
    backend = RaisingBackend(step, error)
    hooks = NothingUp()
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", launch_attempts=2), hooks
    )
    said = SAID_AS[step]
    assert m.value is None and m.skipped_at == said, m
    assert m.reason is not None and m.reason.startswith(f"{said}: "), m.reason
    assert str(error) in m.reason
    if step != said:
        assert f"{step}: " in m.reason  # the step that failed is named
    if kind == "oserror":
        assert "OSError" in m.reason
    assert m.stopped_early is None and m.early_verdict is None
    if step == "build":
        assert backend.steps == ["build"]  # nothing launched, nothing to tear down
    else:
        assert backend.steps[-1] == "teardown"
    assert hooks.said  # torn down (or nothing launched): nothing left up


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_a_launchs_oserror_or_failed_command_is_retried_as_a_launch_failure(
    tmp_path: Path, kind: str
) -> None:
    backend = RaisingBackend("launch", FAILURES[kind], times=2)
    m = evaluate_candidate(
        backend, _candidate(tmp_path), EvaluationSettings("conflicts", launch_attempts=3)
    )
    assert m.value == 5 and m.reason is None and m.launch_attempts == 3
    assert backend.steps[:5] == ["build", "launch", "teardown", "launch", "teardown"]
    assert backend.steps[-1] == "teardown"


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_a_teardowns_oserror_or_failed_command_is_a_failed_teardown(
    tmp_path: Path, kind: str
) -> None:
    error = FAILURES[kind]
    backend = RaisingBackend("teardown", error)
    hooks = NothingUp()
    m = evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"), hooks)
    assert m.teardown_error is not None and str(error) in m.teardown_error
    assert m.value is None and m.skipped_at == "teardown"
    assert m.reason == f"teardown: {m.teardown_error}"
    assert m.metrics["value_before_teardown_failed"] == 5  # kept for reading, never a value
    assert not hooks.said  # something may still be up: said loudly by the caller


@pytest.mark.parametrize("step", ["launch", "collect"])
def test_any_other_exception_propagates_after_the_teardown(tmp_path: Path, step: str) -> None:
    """A bug in a backend (here a RuntimeError) is neither a skip nor a measurement: it
    ends the evaluation with no value to read, once what was launched is torn down."""
    backend = RaisingBackend(step, RuntimeError("a bug"))
    with pytest.raises(RuntimeError, match="a bug"):
        evaluate_candidate(backend, _candidate(tmp_path), EvaluationSettings("conflicts"))
    assert backend.steps[-1] == "teardown"


def test_a_run_goes_on_past_a_backend_whose_collect_raised(tmp_path: Path) -> None:
    """Through the whole run: a commit whose collect raised OSError is a skip with the
    reason, the run does not end there, and the culprit (neither that commit nor its
    child) is still found."""
    built = build_repo(tmp_path / "repo", [1] * 8 + [9] * 8)
    failing: set[str] = set()  # the first commit measured whose skip leaves one culprit
    culprit_and_ends = {built.mainline[i] for i in (0, 7, 8, -1)}

    class Flaky(FileValueBackend):
        def collect(self, candidate: Candidate) -> list[Path]:
            if not failing and candidate.commit not in culprit_and_ends:
                failing.add(candidate.commit)
            if candidate.commit in failing:
                raise OSError(errno.EIO, "Input/output error")
            return super().collect(candidate)

    report, _ = bisect_built(tmp_path, built, Flaky(), threshold=5.0)
    (commit,) = failing
    skipped = [e for e in report.evaluations if e.commit == commit]
    assert skipped and all(e.verdict == "skip" for e in skipped)
    assert all("Input/output error" in (e.reason or "") for e in skipped)
    assert report.culprit is not None and report.culprit.commit == built.mainline[8]


def test_a_builds_oserror_is_the_machines_not_the_trees(tmp_path: Path) -> None:
    """An OSError out of the build step (a missing Go, a directory it may not write) is the
    machine's trouble: a skip measured again later, never "this tree does not build"."""
    missing = FileNotFoundError(2, "No such file or directory", "/usr/lib/go-1.19/bin/go")
    m = evaluate_candidate(
        RaisingBackend("build", missing), _candidate(tmp_path), EvaluationSettings("conflicts")
    )
    assert m.skipped_at == "build" and m.infra_skip, m.reason
    denied = PermissionError(13, "Permission denied", "/src/_output")
    m = evaluate_candidate(
        RaisingBackend("build", denied), _candidate(tmp_path), EvaluationSettings("conflicts")
    )
    assert m.skipped_at == "build" and m.infra_skip, m.reason
