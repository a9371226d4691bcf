"""Verdicts follow the metric's direction (issue 30, the mutation audit).

A throughput (CL2's SchedulingThroughput `max`, bisector.metrics.definitions) is worse
when lower: below the threshold is bad, and a value exactly at the threshold is bad
either way (bisector.metrics.direction). ConfirmRule's one-run shortcut and
MajorityRule's median fallback must both read values that way.
"""

from __future__ import annotations

import pytest

from bisector.search.decide import ConfirmRule, MajorityRule

THRESHOLD = 100.0  # pods scheduled per second


def test_a_bad_throughput_parent_does_not_confirm_as_good_after_one_run() -> None:
    rule = ConfirmRule("good", 3, "lower")
    assert rule.decide([40.0], THRESHOLD).verdict is None  # disagrees: measure again
    assert rule.decide([40.0, 35.0], THRESHOLD).verdict == "bad"


def test_a_good_throughput_parent_confirms_after_one_run() -> None:
    assert ConfirmRule("good", 3, "lower").decide([180.0], THRESHOLD).verdict == "good"


def test_a_throughput_exactly_at_the_threshold_is_bad() -> None:
    assert ConfirmRule("bad", 3, "lower").decide([THRESHOLD], THRESHOLD).verdict == "bad"
    assert ConfirmRule("good", 3, "lower").decide([THRESHOLD], THRESHOLD).verdict is None
    assert MajorityRule(1, "lower").decide([THRESHOLD], THRESHOLD).verdict == "bad"
    assert MajorityRule(1, "lower").decide([THRESHOLD + 0.001], THRESHOLD).verdict == "good"


@pytest.mark.parametrize(
    ("values", "verdict"),
    [
        ([40.0, 180.0], "good"),  # median 110: above the threshold, good for a throughput
        ([40.0, 150.0], "bad"),  # median 95: below it, bad
        ([50.0, 150.0], "bad"),  # median exactly at the threshold: bad
    ],
)
def test_the_median_fallback_reads_a_throughput_as_worse_when_lower(
    values: list[float], verdict: str
) -> None:
    decision = MajorityRule(2, "lower").decide(values, THRESHOLD)  # 1-1: no majority
    assert decision.verdict == verdict, decision
    assert "median" in decision.reason


def test_a_disagreeing_confirmation_run_is_decided_by_a_lower_is_worse_majority() -> None:
    rule = ConfirmRule("bad", 3, "lower")
    assert rule.decide([150.0], THRESHOLD).verdict is None
    assert rule.decide([150.0, 60.0, 70.0], THRESHOLD).verdict == "bad"
    assert rule.decide([150.0, 160.0], THRESHOLD).verdict == "good"
