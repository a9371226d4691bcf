"""The range plot's branch panel names the merge the culprit came in with (report.json's
culprit.merge) and ends with it, on every shape of descent (issue 29: the real 2017 hunt's
panel said `inside merge (merge 82765ba)`, a first-parent commit seven merges older than
481e01706033, because `range` is in date order and the branch's commits sat before it).

The drawn SVG is read back: text stays text in it (bisector.report.svg, svg.fonttype none).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from bisector.report.model import Culprit, Evaluation, MergeRef, ParentResult, Report
from bisector.report.plot import range_svg
from tests.helpers.plot_svg import axes_texts
from tests.helpers.sample_report import MAINLINE, evaluation, sample_report, sha


def _branch_panel(svg: str) -> tuple[str, list[str]]:
    """The branch panel's title and its x tick labels, as drawn."""
    axes = axes_texts(svg)
    assert len(axes) == 2, axes
    texts = axes[1]
    title = next(t for t in texts if "merge" in t)
    ticks = [t for t in texts if re.fullmatch(r"[0-9a-f]{7}( \(good\)| \(bad\))?", t)]
    return title, ticks


def _drawn_merge(svg: str) -> str:
    title, _ticks = _branch_panel(svg)
    match = re.search(r"\(merge ([0-9a-f]+)\)", title)
    assert match is not None, title
    return match[1]


def _descent(
    report: Report, rng: list[str], culprit: str, parent: str, merges: list[str]
) -> Report:
    """`report` re-shaped: `range` in this (date) order, the culprit found inside
    `merges` (outermost first), measured in the search and confirmed with its parent."""
    refs = [MergeRef(m, f"Merge pull request #{46000 + k}", 46000 + k)
            for k, m in enumerate(merges)]  # fmt: skip
    assert report.culprit is not None
    culprit_rec: Culprit = replace(
        report.culprit,
        commit=culprit,
        merge=refs[0],
        merges=refs,
        parent=ParentResult(parent, 12.0, "good"),
    )
    mainline_runs = [e for e in report.evaluations if e.commit in MAINLINE]
    n = len(mainline_runs)
    branch_runs: list[Evaluation] = [
        evaluation(n + 1, parent, "bisect", 12.0),
        evaluation(n + 2, culprit, "bisect", 2300.0),
        *(evaluation(n + 3 + k, m, "bisect", 2300.0) for k, m in enumerate(merges[1:])),
    ]
    return replace(
        report, range=rng, culprit=culprit_rec, evaluations=[*mainline_runs, *branch_runs]
    )


def test_the_2017_shape_names_the_culprits_merge_not_an_older_one(tmp_path: Path) -> None:
    """The branch's commits are older by date than merges m1..m3 of the first-parent line."""
    b1, b2 = sha("b1"), sha("b2")
    rng = [MAINLINE[0], b1, b2, *MAINLINE[1:]]
    report = _descent(sample_report(tmp_path), rng, b2, b1, [MAINLINE[4]])
    svg = range_svg(report)
    assert report.culprit is not None and report.culprit.merge is not None
    drawn = _drawn_merge(svg)
    assert report.culprit.merge.commit.startswith(drawn), (drawn, report.culprit.merge.commit)
    _title, ticks = _branch_panel(svg)
    assert ticks[-1] == report.culprit.merge.commit[:7]  # bounded by the merge
    assert ticks[:-1] == [b1[:7], b2[:7]]


def test_nested_merges_name_the_outermost_first_parent_merge(tmp_path: Path) -> None:
    """The culprit n1 is on a branch merged (bm) into the PR's branch, merged by m5."""
    b1, n1, bm = sha("b1"), sha("n1"), sha("bm")
    rng = [MAINLINE[0], MAINLINE[1], b1, n1, bm, *MAINLINE[2:]]
    report = _descent(sample_report(tmp_path), rng, n1, b1, [MAINLINE[5], bm])
    svg = range_svg(report)
    assert _drawn_merge(svg) == MAINLINE[5][:7]
    _title, ticks = _branch_panel(svg)
    assert ticks == [b1[:7], n1[:7], bm[:7], MAINLINE[5][:7]]


def test_a_merge_with_one_commit(tmp_path: Path) -> None:
    b1 = sha("b1")
    rng = [MAINLINE[0], b1, *MAINLINE[1:]]
    report = _descent(sample_report(tmp_path), rng, b1, MAINLINE[2], [MAINLINE[3]])
    svg = range_svg(report)
    assert _drawn_merge(svg) == MAINLINE[3][:7]
    assert _branch_panel(svg)[1][-1] == MAINLINE[3][:7]


def test_the_sample_report_json_and_the_drawing_agree(tmp_path: Path) -> None:
    """Through report.json, as the issue reads it: the drawn merge is culprit.merge."""
    import json

    report = sample_report(tmp_path)
    data = json.loads(json.dumps(report.to_json()))
    assert data["culprit"]["merge"]["commit"].startswith(_drawn_merge(range_svg(report)))
