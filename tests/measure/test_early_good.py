"""Early good verdicts (`[run] early_good`): a search run that stays below the threshold
for twice the bad endpoint's onset, on course to stay under half of it, ends as good;
the collected log must say the same; a regression that shows later than the bad
endpoint's is caught by the parent's full-length confirmation and searched again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.errors import ConfigError
from bisector.logs import score_logs
from bisector.measure.early import EarlyStop, onset, rescoring
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.journal import EarlyGoodWithdrawn, Measured, read_journal
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from bisector.report.model import Report
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import LATE, T0, GrowingBackend, ShapedFileValue
from tests.helpers.fake_backends import patch_line as _line
from tests.helpers.inprocess import bisect_built
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

# -- the rule ------------------------------------------------------------------------


def _rule(good_after: float | None = 40.0) -> EarlyStop:
    return EarlyStop(
        "conflicts", 250.0, 10.0, 120.0, rescoring(score_logs), good_after_s=good_after
    )


def test_good_so_far_needs_the_time_and_a_projection_under_half_the_threshold() -> None:
    rule = _rule()
    assert not rule.good_so_far(10, 30)  # before twice the onset
    assert rule.good_so_far(40, 40)  # 40 after 40s of 120s: on course for 120 <= 125
    assert not rule.good_so_far(50, 40)  # on course for 150 > 125: could still pass 250
    assert not rule.good_so_far(10, 120)  # the warmup's end: nothing ends early
    assert not _rule(None).good_so_far(0, 60)  # not armed
    watch_only = EarlyStop("conflicts", None, 10.0, 120.0, rescoring(score_logs))
    assert not watch_only.good_so_far(0, 60)


def test_the_onset_is_the_first_look_at_or_above_the_threshold() -> None:
    assert onset([[10.0, 5.0], [20.0, 99.0], [30.0, 100.0], [40.0, 300.0]], 100.0) == 30.0
    assert onset([[10.0, 5.0]], 100.0) is None
    assert onset([], 100.0) is None


# -- one evaluation ---------------------------------------------------------------


class RestartingBackend(GrowingBackend):
    """The apiserver restarted during the watched warmup: the collected log starts late."""

    def collect(self, candidate: Candidate) -> list[Path]:
        self.steps.append("collect")
        log = self._log(candidate)
        late = self.elapsed - 15
        log.write_text(_line(T0 + late, 200) + _line(T0 + self.elapsed, 200))
        return [log]


class JumpingBackend(GrowingBackend):
    """Between the last look and the copy, the log gains `jump` conflicts."""

    def __init__(self, per_step: int, jump: int) -> None:
        super().__init__(per_step)
        self.jump = jump

    def collect(self, candidate: Candidate) -> list[Path]:
        with self._log(candidate).open("a") as f:
            f.writelines(_line(T0 + self.elapsed, 409) for _ in range(self.jump))
        return super().collect(candidate)


def _evaluate(tmp_path: Path, backend: GrowingBackend) -> Measurement:
    cand = Candidate("c" * 40, tmp_path, tmp_path / "eval")
    return evaluate_candidate(
        backend,
        cand,
        EvaluationSettings("conflicts", window=WindowRule(backend.total_s), early=_rule()),
    )


def test_a_quiet_warmup_ends_early_as_good(tmp_path: Path) -> None:
    backend = GrowingBackend(5)  # 5 conflicts per 10 s: 60 by the end, threshold 250
    m = _evaluate(tmp_path, backend)
    assert m.value == 20 and m.reason is None and m.early_verdict == "good"
    assert backend.steps[-3:] == ["step 40", "collect", "teardown"]
    assert m.stopped_early is not None
    assert m.stopped_early.startswith("conflicts 20 < 250 after 40s of 2m00s, on course for 60")
    assert m.trajectory == [[10.0, 5.0], [20.0, 10.0], [30.0, 15.0], [40.0, 20.0]]


def test_a_warmup_on_course_for_more_than_half_the_threshold_runs_on(tmp_path: Path) -> None:
    backend = GrowingBackend(15)  # 180 by the end: below 250, but above 125
    m = _evaluate(tmp_path, backend)
    assert m.early_verdict is None and m.stopped_early is None and m.value == 180
    assert "step 120" in backend.steps


def test_a_log_restarted_during_the_watched_time_is_a_skip(tmp_path: Path) -> None:
    m = _evaluate(tmp_path, RestartingBackend(5))
    assert m.value is None and m.early_verdict is None and m.stopped_early is None
    assert m.reason is not None
    assert m.reason.startswith("log covers 15s of the 40s watched before an early good verdict")


def test_a_collected_log_past_the_threshold_is_bad_whatever_the_look_said(tmp_path: Path) -> None:
    m = _evaluate(tmp_path, JumpingBackend(5, jump=300))
    assert m.value == 320 and m.early_verdict == "bad" and m.reason is None
    assert m.stopped_early is not None and m.stopped_early.endswith(
        "the collected log has 320: bad"
    )


def test_a_collected_log_off_course_is_a_skip_not_good(tmp_path: Path) -> None:
    m = _evaluate(tmp_path, JumpingBackend(5, jump=100))  # 120 after 40s: on course for 360
    assert m.value is None and m.early_verdict is None
    assert m.reason is not None and "not on course to stay below the threshold" in m.reason


def test_early_good_needs_check_every(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1, 9])
    with pytest.raises(ConfigError, match=r"early_good` needs .*check_every"):
        settings_for(
            write_local_config(tmp_path / "cfg").config,
            good=built.mainline[0],
            bad=built.mainline[-1],
            repo=built.path,
            early_good=True,
        )


# -- through the run ------------------------------------------------------------------


def _run(tmp_path: Path, values: list[int]) -> tuple[Report, ShapedFileValue, str, list[str]]:
    built = build_repo(tmp_path / "repo", values)
    backend = ShapedFileValue()
    report, out = bisect_built(
        tmp_path,
        built,
        backend,
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=True,
    )
    return report, backend, out, built.mainline


@pytest.mark.slow
def test_good_search_runs_end_early_and_the_evidence_runs_full_length(tmp_path: Path) -> None:
    report, backend, out, mainline = _run(tmp_path, [20] * 9 + [400] * 7)
    assert report.culprit is not None and report.culprit.commit == mainline[9]
    assert report.confirmed
    # The bad endpoint was watched (its onset: 120 >= 100 at 3 min) and ran whole.
    assert backend.steps_run[mainline[-1]] == 10
    assert "passed the threshold after 3m00s" in out
    evaluations = report.evaluations
    early_goods = [e for e in evaluations if e.stopped_early and (e.value or 0) < 100]
    assert early_goods and all(e.phase == "bisect" for e in early_goods)
    for e in early_goods:  # twice the onset: 6 minutes
        assert e.stopped_early is not None
        assert e.stopped_early.startswith("conflicts 12 < 100 after 6m00s of 10m00s")
    confirm = [e for e in evaluations if e.phase == "confirm"]
    assert len(confirm) == 2 and all(e.stopped_early is None for e in confirm)
    # The parent's confirmation ran its whole warmup, unwatched: 2 a minute for 10 minutes.
    parent = next(e for e in confirm if e.commit == mainline[8])
    assert parent.value == 20


@pytest.mark.slow
def test_a_regression_showing_later_than_the_bad_endpoints_is_searched_again(
    tmp_path: Path,
) -> None:
    # Two regressions: mainline 5 shows only after 8 minutes (the one to find: the first
    # bad), mainline 9 from the start. Early good verdicts pass 5..8 as good; the parent
    # of the culprit they lead to (8) is bad at full length; the search runs again.
    report, _backend, out, mainline = _run(tmp_path, [20] * 5 + [LATE] * 4 + [400] * 7)
    assert report.culprit is not None and report.culprit.commit == mainline[5]
    assert report.confirmed
    assert "measured bad at full length" in out
    assert "searching again without early good verdicts" in out
    # The report keeps the withdrawn early goods, marked as such.
    withdrawn = [
        e for e in report.evaluations if e.stopped_early and "WITHDRAWN" in e.stopped_early
    ]
    assert withdrawn and all((e.value or 0) < 100 for e in withdrawn)
    records = read_journal(Path(report.run_dir) / "journal.jsonl")
    assert any(isinstance(r, EarlyGoodWithdrawn) for r in records)
    measured = [r.measurement for r in records if isinstance(r, Measured)]
    wrong_goods = [m for m in measured if m.early_verdict == "good" and m.value is not None]
    assert any(m.commit in mainline[5:9] for m in wrong_goods)
    # After the withdrawal, nothing ended early as good.
    at = next(i for i, r in enumerate(records) if isinstance(r, EarlyGoodWithdrawn))
    later = [r.measurement for r in records[at:] if isinstance(r, Measured)]
    assert later and all(m.early_verdict != "good" for m in later)


@pytest.mark.slow
def test_a_run_resumed_with_early_good_off_measures_its_early_goods_again(
    tmp_path: Path,
) -> None:
    report, _backend, _out, mainline = _run(tmp_path, [20] * 9 + [400] * 7)
    run_dir = Path(report.run_dir)
    before = [
        r.measurement
        for r in read_journal(run_dir / "journal.jsonl")
        if isinstance(r, Measured) and r.measurement.early_verdict == "good"
    ]
    assert before
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=mainline[0],
        bad=mainline[-1],
        repo=tmp_path / "repo",
        run_dir=run_dir,
        threshold=100.0,
        warmup="10m",
        check_every="1m",
    )
    again = run_bisection(
        settings, backend=ShapedFileValue(), progress=PlainProgress(io.StringIO())
    )
    assert again.culprit is not None and again.culprit.commit == mainline[9]
    journal = read_journal(run_dir / "journal.jsonl")
    measured = [r.measurement for r in journal if isinstance(r, Measured)]
    # Each commit an early good decided before was measured again, whole.
    for m in before:
        full = [x for x in measured if x.commit == m.commit and x.early_verdict is None]
        assert full and all(x.value == 20 for x in full if x.phase == "bisect")
