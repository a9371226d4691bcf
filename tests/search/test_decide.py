from __future__ import annotations

import math

import pytest

from bisector.errors import BisectorError
from bisector.search.decide import MajorityRule, calibrate_threshold


def test_single_run_rule() -> None:
    rule = MajorityRule(1)
    assert rule.decide([10.0], 5).verdict == "bad"
    assert rule.decide([5.0], 5).verdict == "bad"  # at the threshold counts as bad
    assert rule.decide([4.0], 5).verdict == "good"
    assert rule.decide([None], 5).verdict == "skip"
    assert rule.decide([], 5).verdict is None


def test_majority_of_three_stops_early_and_ignores_skips() -> None:
    rule = MajorityRule(3)
    assert rule.decide([9.0], 5).verdict is None
    assert rule.decide([9.0, 9.0], 5).verdict == "bad"
    assert rule.decide([9.0, 1.0], 5).verdict is None
    assert rule.decide([9.0, 1.0, 1.0], 5).verdict == "good"
    assert rule.decide([None, 9.0, 1.0], 5).reason.startswith("no majority")
    assert rule.decide([None, None, None], 5).verdict == "skip"
    assert rule.planned_runs() == 2


def test_calibration() -> None:
    value, how = calibrate_threshold(4449, 1_549_982)
    assert value == pytest.approx(math.sqrt(4449 * 1_549_982))
    assert "geometric mean" in how
    value, how = calibrate_threshold(100, 150)
    assert value == 125 and "midpoint" in how
    assert calibrate_threshold(0, 40)[0] == 20
    assert calibrate_threshold(0, 99)[0] == 49.5  # below the floor's bound: the midpoint


def test_calibration_counts_a_zero_endpoint_as_one_against_a_large_other() -> None:
    """The 2017 hunt with hollow nodes that report at full rate (1 s, 100 nodes): the good
    endpoint counted 0 node PATCH 409s in 5 min, the bad one 776 in the first 15 s and
    13,284 in all (4 December 2026). The midpoint (6,642) would let a bad search run pass
    only after minutes; the log-scale middle (115) sits 115x from both sides."""
    value, how = calibrate_threshold(0, 13_284)
    assert value == pytest.approx(math.sqrt(13_284))
    assert "good 0 counted as 1" in how
    # Lower is worse (a throughput that fell to nothing): the same middle, the same words.
    value, how = calibrate_threshold(13_284, 0, "lower")
    assert value == pytest.approx(math.sqrt(13_284))
    assert "bad 0 counted as 1" in how
    with pytest.raises(BisectorError, match="good 50, bad 40"):
        calibrate_threshold(50, 40)


def test_confirm_rule_takes_one_agreeing_run_and_a_majority_after_a_disagreeing_one() -> None:
    from bisector.search.decide import ConfirmRule

    culprit = ConfirmRule("bad")
    assert culprit.decide([40.0], 10.0).verdict == "bad"  # agrees: one run is enough
    assert culprit.decide([2.0], 10.0).verdict is None  # flipped? measure again
    assert culprit.decide([2.0, 40.0], 10.0).verdict is None
    assert culprit.decide([2.0, 40.0, 40.0], 10.0).verdict == "bad"
    assert culprit.decide([2.0, 2.0], 10.0).verdict == "good"  # really good: not confirmed
    parent = ConfirmRule("good")
    assert parent.decide([2.0], 10.0).verdict == "good"
    assert parent.decide([10.0], 10.0).verdict is None  # at the threshold is bad: disagrees
