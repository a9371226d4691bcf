"""Issue 12: infrastructure that misbehaves never becomes a verdict, a cached measurement,
or a silent leak; and the promises whose mutation left the suite green."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bisector.backends.base import BackendTraits, Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.bisection.report_builder import _verdict
from bisector.ci.changepoint import find_step
from bisector.errors import LaunchError
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.journal import Journal, ThresholdSet
from bisector.report.model import Report
from bisector.search.decide import MajorityRule
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import BuiltRepo, build_repo
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _step(n: int, at: int) -> list[int]:
    return [GOOD] * at + [BAD] * (n - at)


def _glog(when: float, status: int, node: int) -> str:
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(when))
    return (
        f"I{stamp}.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-{node}/status: "
        f"(3.1ms) {status} [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]"
    )


class WindowBackend(FileValueBackend):
    """Wall-clock logs spread over `span(commit)` seconds from the launch (or `lag(commit)`
    seconds before it: a file some earlier cluster wrote); a log cut short holds
    proportionally fewer conflicts, as a restarted apiserver's does."""

    # its logs must show they are the launch's, like a real cluster's
    traits = BackendTraits(real_time_logs=True)

    def __init__(
        self,
        span: dict[str, float],
        lag: dict[str, float] | None = None,
        default_span: float = 1800,
    ) -> None:
        super().__init__()
        self.span = span
        self.lag = lag or {}
        self.default_span = default_span
        self.launched: dict[str, float] = {}

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        self.launched[candidate.commit] = time.time()

    def collect(self, candidate: Candidate) -> list[Path]:
        value = int((candidate.worktree / "value").read_text())
        span = self.span.get(candidate.commit, self.default_span)
        start = self.launched[candidate.commit] - self.lag.get(candidate.commit, 0.0)
        end = start + span
        count = round(value * span / self.default_span)  # cut short: fewer conflicts counted
        lines = [_glog(start, 200, 0)]
        lines += [_glog(start + span * k / (count + 1), 409, k) for k in range(1, count + 1)]
        lines.append(_glog(end, 200, 0))
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "kube-apiserver.log"
        log.write_text("".join(line + "\n" for line in lines))
        return [log]


def _run(built: BuiltRepo, backend: Any, tmp: Path, **flags: Any) -> Report:
    settings = settings_for(
        write_local_config(tmp / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        **{"threshold": 10.0, **flags},
    )
    return run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))


@pytest.mark.slow
def test_a_log_cut_short_mid_warmup_is_a_skip_not_good(tmp_path: Path) -> None:
    # Commit 11 is bad (culprit 9), but its apiserver restarted: its log covers 1 minute
    # of the 30-minute warmup, so it counts few conflicts and would read *good*, sending
    # plain bisection to a wrong, "confirmed" culprit.
    built = build_repo(tmp_path / "repo", _step(16, 9))
    crashed = built.mainline[11]
    backend = WindowBackend({crashed: 60.0})
    report = _run(built, backend, tmp_path, warmup="30m")
    skips = [e for e in report.evaluations if e.commit == crashed]
    assert skips and all(e.verdict == "skip" and e.value is None for e in skips)
    assert all("log covers 1m00s of 30m00s" in (e.reason or "") for e in skips)
    assert all(e.window is not None and 59 < e.window.span_s < 61 for e in skips)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]


def test_a_log_shorter_than_the_endpoints_logs_is_a_skip_without_a_warmup(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 9))
    crashed = built.mainline[11]
    report = _run(built, WindowBackend({crashed: 30.0}, default_span=600), tmp_path)
    skipped = [e for e in report.evaluations if e.commit == crashed]
    assert skipped and all("log covers 30s of 10m00s" in (e.reason or "") for e in skipped)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]


@pytest.mark.slow
def test_a_log_that_ended_seconds_before_the_evaluation_is_a_skip(tmp_path: Path) -> None:
    # Issue 20: a candidate whose apiserver never started, collected from the usual path
    # that still holds the previous candidate's log, ended 5 s before this evaluation
    # began: inside the 120 s allowed for clock skew, it was scored as this commit's.
    built = build_repo(tmp_path / "repo", _step(16, 9))
    stale = built.mainline[11]
    backend = WindowBackend({}, lag={stale: 1800 + 5})
    report = _run(built, backend, tmp_path, warmup="30m")
    skipped = [e for e in report.evaluations if e.commit == stale]
    assert skipped and all("stale log: it starts 30m0" in (e.reason or "") for e in skipped)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]


@pytest.mark.slow
def test_a_stale_log_from_before_the_launch_is_a_skip(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 9))
    stale = built.mainline[11]
    report = _run(built, WindowBackend({}, lag={stale: 3 * 3600}), tmp_path, warmup="30m")
    skipped = [e for e in report.evaluations if e.commit == stale]
    assert skipped and all("stale log" in (e.reason or "") for e in skipped)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]


class OutageBackend(FileValueBackend):
    """Launches of `down` fail while `outage` is on (an infrastructure outage)."""

    def __init__(self, down: set[str]) -> None:
        super().__init__()
        self.down = down

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        if candidate.commit in self.down:
            raise LaunchError("quota exceeded (simulated outage)")


@pytest.mark.slow
def test_an_infrastructure_skip_is_not_cached_and_a_later_run_retries_it(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 9))
    culprit = built.mainline[9]
    first = _run(built, OutageBackend({culprit}), tmp_path, launch_attempts=1)
    assert first.culprit is None or first.culprit.commit != culprit or not first.confirmed
    cache = built.path / ".git" / "bisector" / "measurements.jsonl"
    cached = [json.loads(line)["measurement"] for line in cache.read_text().splitlines()]
    assert cached and all(m["value"] is not None for m in cached)
    # Another range over the same commits, the outage over: the culprit is launched again.
    again = OutageBackend(set())
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[1],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
    )
    report = run_bisection(settings, backend=again, progress=PlainProgress(io.StringIO()))
    assert ("launch", culprit) in again.steps
    assert report.culprit is not None and report.culprit.commit == culprit and report.confirmed


# -- promises whose mutation once left every test green -------------------------------


class AlwaysFailsToLaunch(FileValueBackend):
    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        raise LaunchError("no capacity")


def test_teardown_runs_after_the_last_failed_launch_attempt(tmp_path: Path) -> None:
    backend = AlwaysFailsToLaunch()
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "value").write_text("2\n")
    candidate = Candidate("c" * 40, worktree, tmp_path / "eval")
    m = evaluate_candidate(backend, candidate, EvaluationSettings("conflicts", launch_attempts=2))
    assert m.value is None and m.launch_attempts == 2
    steps = [s for s, _ in backend.steps]
    assert steps == ["build", "launch", "teardown", "launch", "teardown"]


def test_every_journal_append_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    journal = Journal(tmp_path / "journal.jsonl", tmp_path / "cache.jsonl", "f")
    journal.write(ThresholdSet(1.0, "given"))
    assert len(synced) == 1


def test_a_value_exactly_at_the_threshold_is_bad_everywhere() -> None:
    # The repeats rule's median fallback (no majority: median of 9 and 11 is 10).
    assert MajorityRule(2).decide([9.0, 11.0], 10.0).verdict == "bad"
    assert MajorityRule(1).decide([10.0], 10.0).verdict == "bad"
    # The report's per-run verdict.
    assert _verdict(10.0, 10.0) == "bad"
    # The change point with a given threshold: runs at it count as bad.
    step = find_step([5.0, 5.0, 10.0, 10.0, 10.0], threshold=10.0)
    assert step is not None and step.first_bad == 2


def test_noise_aware_endpoint_check_reads_a_bad_endpoint_at_the_threshold_as_bad(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", _step(12, 6))
    report = _run(built, FileValueBackend(), tmp_path, threshold=float(BAD), likelihood="metric")
    assert report.culprit is not None and report.culprit.commit == built.mainline[6]


def test_a_regression_inside_a_hunted_range_is_not_hunted_again(tmp_path: Path) -> None:
    from bisector.ci.changepoint import Step
    from bisector.nightly.config import Budget, JobConfig
    from bisector.nightly.runner import _covering_hunt
    from bisector.nightly.series import Regression
    from bisector.nightly.store import NightlyStore, StoredRun

    store = NightlyStore(tmp_path / "n.db")
    job = JobConfig("j", "ci-j", "b", "conflicts", None, None, Budget(), 2, None, None, "here")
    hunt = store.start_hunt("j", "conflicts", ("g100", 100), ("b110", 110), tmp_path / "h")
    store.update_hunt(hunt.id, status="found")

    def regression(good: int, bad: int) -> Regression:
        runs = [StoredRun(r, f"c{r}", "SUCCESS", None, 1.0, "ok") for r in (good, bad)]
        return Regression(Step(0, 1, 5.0, "given", 1.0, 9.0), runs[0], runs[1], runs)

    assert _covering_hunt(store, job, regression(100, 105)) is not None  # good side, narrower
    assert _covering_hunt(store, job, regression(105, 110)) is not None  # bad side, narrower
    assert _covering_hunt(store, job, regression(95, 105)) is None  # reaches outside: new
    assert _covering_hunt(store, job, regression(105, 115)) is None
    store.close()


@pytest.mark.slow
def test_a_finished_run_is_never_extended_by_a_differently_configured_one(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(32, 20))
    first = _run(built, FileValueBackend(), tmp_path)
    again = _run(built, FileValueBackend(), tmp_path)  # same question: same directory, reused
    assert again.run_dir == first.run_dir
    assert [e.commit for e in again.evaluations] == [e.commit for e in first.evaluations]
    parallel = _run(built, FileValueBackend(), tmp_path, parallel=2)  # another question
    assert parallel.run_dir != first.run_dir
    numbers = [e.n for e in parallel.evaluations]
    assert numbers == list(range(1, len(numbers) + 1))
    starts = [e.started_at for e in parallel.evaluations]
    assert starts == sorted(starts)
