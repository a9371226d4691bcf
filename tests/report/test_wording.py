"""The report's terse reasons said in plain English (issue 29's "smaller" wordings)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bisector.report.facts import why_culprit
from bisector.report.summary import summary_lines
from bisector.report.wording import counted_whole_plain, same_tree_plain
from tests.helpers.sample_report import BRANCH, sample_report

# The reason bisector.measure.evaluator._twin_said records, as the demo's run printed it.
SAME_TREE = "same tree as 45a9d215875d, measured there: 3,927"


def test_a_same_tree_verdict_says_which_commit_was_measured_and_why() -> None:
    text = same_tree_plain(SAME_TREE)
    assert text == (
        "the search judged it by commit 45a9d215875d, which has the same source tree and "
        "measured 3,927"
    )
    assert "measured there" not in text


def test_several_same_tree_commits_are_plural() -> None:
    text = same_tree_plain("same tree as aaaa, bbbb, measured there: 1, 2", "the culprit")
    assert text.startswith("the search judged the culprit by commits aaaa, bbbb, which have")


def test_any_other_reason_is_left_as_it_is() -> None:
    assert same_tree_plain("conflicts 5 < 10") == "conflicts 5 < 10"


def test_the_culprits_sentence_and_summary_say_it_plainly(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    report = replace(
        report, verdict_reasons={BRANCH[1]: SAME_TREE}, same_tree_verdicts={BRANCH[1]: SAME_TREE}
    )
    why = why_culprit(report)
    assert "(the search judged it by commit 45a9d215875d, which has the same source" in why
    assert "search verdict:" not in why
    lines = "\n".join(summary_lines(report))
    assert "the search judged the culprit by commit 45a9d215875d" in lines
    assert "search verdict:" not in lines


def test_evaluations_without_a_launch_log_are_explained(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    assert report.cost is not None
    measured = replace(report.cost.measured, counted_whole=11)
    report = replace(report, cost=replace(report.cost, measured=measured))
    lines = "\n".join(summary_lines(report))
    assert "11 evaluations have no launch log, so their builds are counted in their" in lines
    assert "counted with their build" not in lines
    assert counted_whole_plain(1).startswith("1 evaluation has no launch log")
