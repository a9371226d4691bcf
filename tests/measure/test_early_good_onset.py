"""The bad endpoint's onset arms early good verdicts: it must come from that run's own log.

A peek can lie: a copy that reads another candidate's file (a slot mixed up, a master
reused before its log was rotated, a stale file on the path the peek reads). When the
bad endpoint's first look reads a log already past the threshold that its own run only
passes later, the onset comes out early, search runs are judged good after twice that,
and a regression that starts slowly is passed as good: the safety net catches it, but
only after a whole search wasted. A metric that only grows cannot read more at a look
than at a later look or in the collected log: such looks were not of this run.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.measure.early import looks_agree
from bisector.measure.journal import EarlyGoodWithdrawn, Measured, read_journal
from bisector.report.model import Report
from bisector.settings import RunSettings
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import T0, ShapedFileValue
from tests.helpers.fake_backends import patch_line as _line
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import BuiltRepo, build_repo
from tests.helpers.settings import settings_for

SLOW = 500  # 5 conflicts a minute for 3 minutes, then 100: past 100 at minute 4


class LyingPeek(ShapedFileValue):
    """The first look at the bad endpoint reads another candidate's finished log."""

    def __init__(self, bad: str, lie: bool) -> None:
        super().__init__()
        self.bad = bad
        self.lie = lie
        self.looks: dict[Path, int] = {}

    @staticmethod
    def per_minute(value: int, minute: int) -> int:
        if value == SLOW:
            return 5 if minute <= 3 else 100
        return ShapedFileValue.per_minute(value, minute)

    def peek(self, candidate: Candidate) -> list[Path]:
        n = self.looks[candidate.eval_dir] = self.looks.get(candidate.eval_dir, 0) + 1
        if self.lie and candidate.commit == self.bad and n == 1:
            other = candidate.eval_dir / "other-candidate.log"
            lines = [_line(T0 + 60 * k, 409) for k in range(1, 11) for _ in range(40)]
            other.write_text("".join(lines))
            return [other]
        return super().peek(candidate)


def _run(tmp_path: Path, *, lie: bool) -> tuple[Report, BuiltRepo, str]:
    built = build_repo(tmp_path / "repo", [20] * 6 + [SLOW] * 6)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=True,
    )
    out = io.StringIO()
    backend = LyingPeek(built.mainline[-1], lie)
    report = run_bisection(settings, backend=backend, progress=PlainProgress(out))
    return report, built, out.getvalue()


def _early_goods_on_bad_commits(report: Report, built: BuiltRepo) -> list[str]:
    records = read_journal(Path(report.run_dir) / "journal.jsonl")
    return [
        r.measurement.commit
        for r in records
        if isinstance(r, Measured)
        and r.measurement.early_verdict == "good"
        and built.value(r.measurement.commit) == SLOW
    ]


@pytest.mark.slow
def test_an_honest_onset_passes_no_slow_regression_as_good(tmp_path: Path) -> None:
    report, built, out = _run(tmp_path, lie=False)
    assert "passed the threshold after 4m00s" in out
    assert report.culprit is not None and report.culprit.commit == built.mainline[6]
    assert report.confirmed
    assert _early_goods_on_bad_commits(report, built) == []


def test_a_look_reading_more_than_the_runs_own_log_does_not_set_the_onset(
    tmp_path: Path,
) -> None:
    report, built, out = _run(tmp_path, lie=True)
    assert report.culprit is not None and report.culprit.commit == built.mainline[6]
    assert report.confirmed
    assert "passed the threshold after 1m00s" not in out
    assert "early good verdicts off: a look at the bad endpoint's log read more" in out
    assert _early_goods_on_bad_commits(report, built) == []
    records = read_journal(Path(report.run_dir) / "journal.jsonl")
    assert not any(isinstance(r, EarlyGoodWithdrawn) for r in records)


def test_looks_agree_only_when_no_look_reads_more_than_a_later_one_or_the_log() -> None:
    assert looks_agree([[60.0, 5.0], [120.0, 10.0], [180.0, 10.0]], 12.0)
    assert looks_agree([], 3.0)
    assert not looks_agree([[60.0, 400.0], [120.0, 10.0]], 20.0)  # a look at another file
    assert not looks_agree([[60.0, 5.0], [120.0, 30.0]], 20.0)  # more than the collected log


class StopAfterEndpoints(LyingPeek):
    """Ctrl-C as the first search run launches: the endpoints alone are journaled."""

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        if candidate.commit not in (self.good, self.bad):
            raise KeyboardInterrupt

    good = ""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["resumed", "cached"])
def test_bad_endpoint_runs_measured_unwatched_leave_early_good_off(
    tmp_path: Path, where: str
) -> None:
    """Runs of the bad endpoint from the journal of a run resumed with early good turned
    on, or from the cache (another run of the same config and bad commit), made before
    early good was on, have no looks: no onset, no early good verdict."""
    built = build_repo(tmp_path / "repo", [20] * 10 + [400] * 4)

    def settings(good: int, early_good: bool, run_dir: Path) -> RunSettings:
        return settings_for(
            write_local_config(tmp_path / "cfg").config,
            good=built.mainline[good],
            bad=built.mainline[-1],
            repo=built.path,
            run_dir=run_dir,
            threshold=100.0,
            warmup="10m",
            check_every="1m",
            early_good=early_good,
        )

    quiet = PlainProgress(io.StringIO())
    if where == "resumed":
        stop = StopAfterEndpoints(built.mainline[-1], lie=False)
        stop.good = built.mainline[0]
        with pytest.raises(KeyboardInterrupt):
            run_bisection(settings(0, False, tmp_path / "run"), backend=stop, progress=quiet)
    else:  # another range, same bad commit: its runs of the bad commit are in the cache
        run_bisection(
            settings(9, False, tmp_path / "other"),
            backend=LyingPeek(built.mainline[-1], lie=False),
            progress=quiet,
        )
    out = io.StringIO()
    again = run_bisection(
        settings(0, True, tmp_path / "run"),
        backend=LyingPeek(built.mainline[-1], lie=False),
        progress=PlainProgress(out),
    )
    assert "early good verdicts off: the bad endpoint's warmup was not watched" in out.getvalue()
    assert again.culprit is not None and again.culprit.commit == built.mainline[10]
    assert again.confirmed
    records = read_journal(Path(again.run_dir) / "journal.jsonl")
    fresh_goods = [
        r.measurement
        for r in records
        if isinstance(r, Measured)
        and r.measurement.phase == "bisect"
        and built.value(r.measurement.commit) == 20
    ]
    assert fresh_goods, "no good commit measured in this run: nothing tested"
    assert all(m.early_verdict is None for m in fresh_goods)


class TwoOnsets(ShapedFileValue):
    """The bad endpoint's second run passes the threshold a minute later than its first
    (40 conflicts a minute, then 25): its onsets are 3 and 4 minutes."""

    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad
        self.launches: dict[str, int] = {}

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        self.launches[candidate.commit] = self.launches.get(candidate.commit, 0) + 1

    def _write(self, candidate: Candidate, count: int) -> Path:
        log = super()._write(candidate, count)
        if candidate.commit == self.bad and self.launches.get(candidate.commit) == 2:
            lines = [_line(T0, 200)]
            for k in range(1, count + 1):
                lines += [_line(T0 + 60 * k, 409)] * 25 + [_line(T0 + 60 * k, 200)]
            log.write_text("".join(lines))
        return log


def test_the_onset_is_the_latest_of_several_bad_endpoint_runs(tmp_path: Path) -> None:
    # Early good verdicts wait twice the onset: armed from the earlier of two onsets, a
    # run that the slower bad endpoint run would not yet have shown bad is called good.
    built = build_repo(tmp_path / "repo", [20] * 6 + [400] * 6)
    config = write_local_config(tmp_path / "cfg").config
    config.write_text(config.read_text() + "\n[search]\nendpoint_runs = 2\n")
    settings = settings_for(
        config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=True,
    )
    out = io.StringIO()
    backend = TwoOnsets(built.mainline[-1])
    report = run_bisection(settings, backend=backend, progress=PlainProgress(out))
    assert backend.launches[built.mainline[-1]] >= 2  # both bad endpoint runs were watched
    assert "the bad endpoint passed the threshold after 4m00s" in out.getvalue()
    early_goods = [e for e in report.evaluations if e.stopped_early and (e.value or 0) < 100]
    assert early_goods and all(
        "after 8m00s of 10m00s" in (e.stopped_early or "") for e in early_goods
    )
    assert report.culprit is not None and report.culprit.commit == built.mainline[6]
