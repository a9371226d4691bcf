"""The range plot: x positions are the first-parent order, repeats side by side, skips in
the legend, measured commits labelled."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

from bisector.report.plot import (
    LABEL_CHARS,
    LABEL_GAP_IN,
    REPEAT_OFFSET,
    labelled,
    panels,
    points,
    range_svg,
)
from tests.helpers.plot_svg import axes_texts
from tests.helpers.sample_report import BRANCH, MAINLINE, RANGE, sample_report, sha


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


def test_crowded_labels_keep_the_ends_the_culprit_and_the_first_measured() -> None:
    commits = [f"c{i:02d}" for i in range(95)]
    # The 2017 hunt's first-parent order of measurement: 47, 23, 11, 17, 20, 21, 22 ...
    measured = ["c47", "c23", "c11", "c17", "c20", "c21", "c22", "c94", "c00"]
    wide = labelled(commits, measured, ["c22"], axis_in=7.0)  # 0.074 in per commit
    gap = LABEL_GAP_IN / (7.0 / 95)
    assert set(wide) == {0, 94, 22, 47, 11, 17}  # ends, the culprit's merge, spread ones
    # 23 was measured second but sits beside the merge (22), as 20 and 21 do.
    others = sorted(set(wide) - {22})
    assert all(b - a >= gap for a, b in itertools.pairwise(others))
    # On a wide enough axis every measured commit is labelled.
    assert labelled(commits, measured, ["c22"], axis_in=95 * LABEL_GAP_IN) == sorted(
        {int(c[1:]) for c in measured}
    )


def test_the_2017_shape_draws_no_label_over_another(tmp_path: Path) -> None:
    """Five search runs within six of 95 first-parent commits (the real hunt, 4 December
    2026: b6c00ae, 481e017, c866355, 49b0fe1 and e59fd18 drew over each other at 1280 px):
    the labels drawn are at least LABEL_GAP_IN of axis apart, the merge always among them."""
    report = sample_report(tmp_path)
    mainline = [sha(f"f{i}") for i in range(95)]
    fp_runs = [
        replace(e, commit=mainline[(0, 47, 23, 11, 17, 20, 21, 22, 94)[k % 9]])
        for k, e in enumerate(e for e in report.evaluations if e.commit in MAINLINE)
    ]
    assert report.culprit is not None and report.culprit.merge is not None
    merge = replace(report.culprit.merge, commit=mainline[21])
    report = replace(
        report,
        first_parent_range=mainline,
        range=[*mainline[:21], *BRANCH, *mainline[21:]],
        good=replace(report.good, commit=mainline[0]),
        bad=replace(report.bad, commit=mainline[94]),
        culprit=replace(report.culprit, merge=merge, merges=[merge]),
        evaluations=[*fp_runs, *(e for e in report.evaluations if e.commit in BRANCH)],
    )
    svg = range_svg(report)
    drawn = [t for t in axes_texts(svg)[0] if re.fullmatch(r"[0-9a-f]{7}( \(\w+\))?", t)]
    at = sorted(mainline.index(next(c for c in mainline if c.startswith(t[:7]))) for t in drawn)
    assert 21 in at and at[0] == 0 and at[-1] == 94
    assert len(at) < len({e.commit for e in fp_runs})  # some were left unlabelled
    # 0.19 in of a main axis under 9 in wide (the figure is 10 in) is over two commits.
    assert min(b - a for a, b in itertools.pairwise(at)) >= 3
