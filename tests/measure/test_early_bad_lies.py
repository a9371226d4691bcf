"""A warmup ended early as bad on a look its own collected log contradicts.

The metrics that stop a run early only grow: a look at or above the threshold and a
later log below it cannot both be of this run. The look read another file (a stale
copy, another slot's log); the run was cut short for nothing, and its log, below the
threshold because it is short, must not become a good verdict (the early good rules,
and the safety net that counts early good verdicts, never see it): a skip.
"""

from __future__ import annotations

from pathlib import Path

from bisector.backends.base import Candidate
from bisector.logs import Scores, score_logs
from bisector.measure.early import EarlyEnd, EarlyStop, rescoring
from bisector.measure.evaluation import EvaluationSettings, _score, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from tests.helpers.fake_backends import T0, GrowingBackend
from tests.helpers.fake_backends import patch_line as _line


class OtherFileAtLook(GrowingBackend):
    """From look `at` on, the peek reads another candidate's log, past the threshold."""

    def __init__(self, per_step: int, at: int) -> None:
        super().__init__(per_step)
        self.at = at
        self.looks = 0

    def peek(self, candidate: Candidate) -> list[Path]:
        self.looks += 1
        if self.looks < self.at:
            return super().peek(candidate)
        other = candidate.eval_dir / "other.log"
        other.write_text("".join(_line(T0 + k, 409) for k in range(300)))
        return [other]


def test_a_look_its_own_log_contradicts_makes_the_run_a_skip(tmp_path: Path) -> None:
    # 15 conflicts per 10 s: 120 after 80 s, 180 by the end (threshold 250); the look
    # at 80 s (two thirds of the warmup) reads another file with 300.
    backend = OtherFileAtLook(15, at=8)
    early = EarlyStop("conflicts", 250.0, 10.0, 120.0, rescoring(score_logs))
    m = evaluate_candidate(
        backend,
        Candidate("c" * 40, tmp_path, tmp_path / "eval"),
        EvaluationSettings("conflicts", window=WindowRule(120.0), early=early),
    )
    assert backend.steps[-3:] == ["step 80", "collect", "teardown"]  # cut short there
    assert m.value is None, m
    assert m.reason is not None and "stopped early as bad" in m.reason
    assert m.stopped_early is None and m.early_verdict is None


def test_an_early_bad_log_without_timestamps_is_a_skip_as_a_whole_one_would_be() -> None:
    # Waiving coverage for a log short on purpose must not waive its timestamps: without
    # them a stale or restarted log cannot be told apart (a whole run's log is a skip).
    def scorer(_logs: list[str]) -> Scores:
        return Scores({"conflicts": 300.0})  # a value, and no time at all

    early = EarlyStop("conflicts", 250.0, 10.0, 120.0, rescoring(scorer))
    ended = EarlyEnd("bad", 30.0, "conflicts 300 >= 250 after 30s of 2m00s")
    m = Measurement("c" * 40, "t", "bisect")
    _score(scorer, ["log"], "conflicts", m, WindowRule(120.0), early=early, ended=ended)
    assert m.value is None
    assert m.reason == "no data: the log has no timestamps to tell what time it covers"


def test_a_look_whose_scorer_fails_only_means_warming_up_on(tmp_path: Path) -> None:
    def broken(_logs: list[str]) -> Scores:
        raise KeyError("a [metrics.NAME] scorer's bug on a half-written line")

    backend = GrowingBackend(100)
    early = EarlyStop("conflicts", 250.0, 10.0, backend.total_s, lambda: broken)
    m = evaluate_candidate(
        backend,
        Candidate("c" * 40, tmp_path, tmp_path / "eval"),
        EvaluationSettings("conflicts", window=WindowRule(backend.total_s), early=early),
    )
    assert m.stopped_early is None and m.value == 1200  # the whole warmup, then scored
    assert "step 120" in backend.steps
