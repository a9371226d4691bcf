"""A commit's verdict from its runs (bisector/measure/decisions.py): a same-tree merge is
said as such, typed (`Decision.same_tree`), never recognised later by its words."""

from __future__ import annotations

from bisector.measure.decisions import _same_tree_said
from bisector.measure.measurement import Measurement
from bisector.search.decide import Decision, SameTree

MERGE, BRANCH_TIP = "a" * 40, "b" * 40


def test_a_verdict_from_another_commit_with_the_tree_is_a_same_tree_merge() -> None:
    runs = [Measurement(BRANCH_TIP, "t", "bisect", value=4715.0)]
    decision = _same_tree_said(MERGE, runs, Decision("bad", "1 of 1 runs at or above"), "conflicts")
    assert decision.verdict == "bad"
    assert decision.same_tree == SameTree((BRANCH_TIP,), ("4,715",))
    assert decision.reason == f"same tree as {BRANCH_TIP[:12]}, measured there: 4,715"


def test_a_verdict_from_the_commits_own_runs_is_not() -> None:
    runs = [
        Measurement(BRANCH_TIP, "t", "bisect", value=4715.0),
        Measurement(MERGE, "t", "bisect", value=4700.0),
    ]
    given = Decision("bad", "2 of 2 runs at or above")
    assert _same_tree_said(MERGE, runs, given, "conflicts") == given
    assert given.same_tree is None


def test_a_reason_that_only_reads_like_one_is_not_a_same_tree_merge() -> None:
    said = Decision("good", "same tree as yesterday's, marked by hand")
    assert said.same_tree is None
