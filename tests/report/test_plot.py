"""The range plot: x positions are the first-parent order, repeats side by side, skips in
the legend, measured commits labelled."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bisector.report.plot import LABEL_CHARS, REPEAT_OFFSET, panels, points, range_svg
from tests.report.sample import BRANCH, MAINLINE, RANGE, sample_report


def test_main_axis_is_the_first_parent_chain_and_the_branch_gets_its_own_panel(
    tmp_path: Path,
) -> None:
    report = sample_report(tmp_path)
    main, branch = panels(report)
    assert main.commits == MAINLINE  # x = index: 0 is good, 7 is bad, as the text counts
    assert branch.commits == [*BRANCH, MAINLINE[4]] and branch.merge == MAINLINE[4]
    assert "PR #46588" in branch.title


def test_x_positions_follow_first_parent_order(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    placed = points(report, panels(report))
    single = {pt.evaluation.commit: pt.x for pt in placed if pt.panel == 0}
    assert single[MAINLINE[2]] == 2 and single[MAINLINE[3]] == 3
    merge_x = [pt.x for pt in placed if pt.evaluation.commit == MAINLINE[4]]
    assert sorted(merge_x) == [2, 4]  # last in the branch panel, and 4 on the main axis


def test_without_first_parent_the_axis_is_every_commit(tmp_path: Path) -> None:
    report = replace(sample_report(tmp_path), first_parent=False)
    (only,) = panels(report)
    assert only.commits == RANGE
    placed = points(report, [only])
    assert {pt.x for pt in placed if pt.evaluation.commit == BRANCH[1]} == {
        RANGE.index(BRANCH[1]) - REPEAT_OFFSET / 2,
        RANGE.index(BRANCH[1]) + REPEAT_OFFSET / 2,
    }


def test_repeated_measurements_sit_side_by_side_in_order(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    placed = [pt for pt in points(report, panels(report)) if pt.evaluation.commit == MAINLINE[0]]
    assert [pt.evaluation.n for pt in placed] == [1, 2]
    assert [pt.x for pt in placed] == [-REPEAT_OFFSET / 2, REPEAT_OFFSET / 2]


def test_svg_labels_measured_commits_and_lists_skips_in_the_legend(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    svg = range_svg(report)
    assert svg.startswith("<svg") and "width:100%" in svg
    for commit in (MAINLINE[0], MAINLINE[2], MAINLINE[7], BRANCH[1]):
        assert commit[:LABEL_CHARS] in svg
    assert MAINLINE[5][:LABEL_CHARS] not in svg  # never measured: a bare tick
    assert "skipped (no value)" in svg and "threshold 100" in svg
    assert ">culprit<" in svg and "could be the culprit" not in svg


def test_no_skip_entry_when_nothing_was_skipped(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    report.evaluations = [e for e in report.evaluations if e.value is not None]
    assert "skipped (no value)" not in range_svg(report)


def test_without_a_culprit_its_candidates_are_shaded_and_named(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    report.culprit, report.status, report.candidates = None, "inconclusive", MAINLINE[2:4]
    svg = range_svg(report)
    assert "could be the culprit" in svg and ">culprit<" not in svg


# Issue 22, point 6.
def test_early_stopped_runs_are_hollow_and_in_the_legend(tmp_path: Path) -> None:
    report = sample_report(tmp_path)  # run 7 stopped early at 2450
    svg = range_svg(report)
    assert "stopped early (value so far)" in svg
    none = replace(report, evaluations=[replace(e, stopped_early=None) for e in report.evaluations])
    assert "stopped early" not in range_svg(none)  # no entry when no run stopped early


def test_a_branch_panel_title_is_short_lines_that_fit(tmp_path: Path) -> None:
    _main, branch = panels(sample_report(tmp_path))
    assert branch.title == f"inside PR #46588\n(merge {MAINLINE[4][:LABEL_CHARS]})"
    assert max(len(line) for line in branch.title.splitlines()) <= 16
