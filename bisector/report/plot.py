"""The metric along the range: where each measurement sits, and the plot drawn from that.

x positions: with --first-parent the main panel's axis is `first_parent_range` (0 = good,
last = bad), the commits the text counts. Commits measured inside a merged branch (the
recursive descent) get a second panel per merge: that branch's commits in `range` order,
then the merge itself; in the main panel the merge's position is where they came in.
Without --first-parent the axis is `range`, every commit.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from bisector.report.facts import threshold_text
from bisector.report.model import Evaluation, Report
from bisector.report.svg import svg_of

COLOURS = {"good": "#2e7d32", "bad": "#c62828", "skip": "#757575"}
SUSPECT = "#ef6c00"  # shading of the commits the culprit could be, without a single one
PHASE_MARKERS = {"endpoint": "s", "bisect": "o", "confirm": "D"}
REPEAT_OFFSET = 0.16  # x offset between repeated measurements of one commit
LABEL_CHARS = 7
# A 9 pt label turned 60 degrees needs ~0.19 in of axis from its neighbours: a bisection
# of the 2017 range puts five search runs within six of 95 first-parent commits, whose
# labels would overlap. Closer measured commits keep their marks and minor ticks, not a label.
LABEL_GAP_IN = 0.19


@dataclass(frozen=True)
class Panel:
    title: str
    commits: list[str]  # x = index
    merge: str | None = None  # the merge whose branch this panel shows


def panels(report: Report) -> list[Panel]:
    """The main axis, then a panel for the merged branch the search went into.

    The branch panel holds the commits measured off the first-parent line, oldest left,
    and ends with the merge they came in with (report.json's culprit.merge): bounded by
    that merge, however the branch's commits interleave by date with older first-parent
    merges in `range` (the 2017 regression's culprit f93a270 sits there before merge 82765ba,
    seven merges older than its own 481e01706033).
    """
    fp = report.first_parent_range if report.first_parent else []
    if not fp:
        return [Panel("every commit of good..bad, oldest left", list(report.range))]
    main = Panel("first-parent commits of good..bad, oldest left", list(fp))
    on_main = set(fp)
    measured = {e.commit for e in report.evaluations} - on_main
    if not measured:
        return [main]
    order = {c: i for i, c in enumerate(report.range)}
    branch = sorted(measured, key=lambda c: (order.get(c, len(order)), c))
    merge = descended_merge(report)
    if merge is None:
        return [main, Panel("off the first-parent line", branch)]
    return [main, Panel(_merge_title(report, merge), [*branch, merge], merge)]


def descended_merge(report: Report) -> str | None:
    """The first-parent merge whose branch the search went into: the culprit's merge
    (report.json culprit.merge); without a culprit, the first bad first-parent commit
    right after a good one (where git bisect --first-parent stopped and descended)."""
    if report.culprit is not None:
        return report.culprit.merge.commit if report.culprit.merge else None
    verdicts = {report.good.commit: "good", report.bad.commit: "bad", **report.verdicts}
    for older, newer in itertools.pairwise(report.first_parent_range):
        if verdicts.get(older) == "good" and verdicts.get(newer) == "bad":
            return newer
    return None


def _merge_title(report: Report, merge: str) -> str:
    """Short lines: the panel is narrow, and a long title ran off the figure."""
    refs = report.culprit.merges if report.culprit else []
    pr = next((m.pr for m in refs if m.commit == merge and m.pr), None)
    inside = f"inside PR #{pr}" if pr else "inside merge"
    return f"{inside}\n(merge {merge[:LABEL_CHARS]})"


@dataclass(frozen=True)
class Point:
    panel: int
    x: float  # the commit's index plus an offset when it was measured more than once
    evaluation: Evaluation


def points(report: Report, layout: list[Panel]) -> list[Point]:
    """Every measurement's place; repeats of a commit spread side by side, in order.

    A merge whose branch has a panel is drawn in both: on the main axis, and last in
    its branch's panel for comparison with the branch's commits.
    """
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for k, panel in enumerate(layout):
        for i, commit in enumerate(panel.commits):
            where[commit].append((k, i))
    by_commit: dict[str, list[Evaluation]] = defaultdict(list)
    for e in sorted(report.evaluations, key=lambda e: e.n):
        by_commit[e.commit].append(e)
    placed = []
    for commit, runs in by_commit.items():
        for k, i in where.get(commit, []):
            for j, e in enumerate(runs):
                offset = (j - (len(runs) - 1) / 2) * REPEAT_OFFSET
                placed.append(Point(k, i + offset, e))
    return placed


def _log_scale(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and len(positive) == len(values) and max(positive) >= 100 * min(positive)


def _suspects(report: Report) -> list[str]:
    """Without a single culprit: the commits it could be (candidates or the likely range)."""
    if report.culprit is not None:
        return []
    likely = report.search.likely_range
    return list(report.candidates) or (list(likely.commits) if likely else [])


def labelled(
    commits: list[str], measured: list[str], always: list[str], axis_in: float
) -> list[int]:
    """The x positions to label, in order: both ends and the commits in `always` (the
    culprit, its merge) always; the other measured commits in the order they were first
    measured (the search's early, far-apart midpoints first) where their label keeps
    LABEL_GAP_IN of axis from every label placed before it."""
    if not commits:
        return []
    gap = LABEL_GAP_IN * len(commits) / max(axis_in, 1e-3)  # in commits
    index = {c: i for i, c in enumerate(commits)}
    placed = {0, len(commits) - 1} | {index[c] for c in always if c in index}
    for commit in measured:
        i = index.get(commit)
        if i is not None and all(abs(i - j) >= gap for j in placed):
            placed.add(i)
    return sorted(placed)


def _draw_panel(ax: Any, report: Report, panel: Panel, mine: list[Point], log: bool) -> None:
    from matplotlib.transforms import blended_transform_factory

    culprit = report.culprit.commit if report.culprit else None
    merge = report.culprit.merge.commit if report.culprit and report.culprit.merge else None
    suspects = set(_suspects(report))
    for x, commit in enumerate(panel.commits):
        if commit in suspects:
            ax.axvspan(x - 0.45, x + 0.45, color=SUSPECT, alpha=0.18, lw=0)
        if commit == culprit:
            ax.axvspan(x - 0.45, x + 0.45, color=COLOURS["bad"], alpha=0.12, lw=0)
        elif commit == merge and panel.merge is None:
            ax.axvspan(x - 0.45, x + 0.45, color=COLOURS["bad"], alpha=0.06, lw=0)
    skip_y = blended_transform_factory(ax.transData, ax.transAxes)
    for pt in mine:
        e = pt.evaluation
        if e.value is None:
            ax.axvline(pt.x, color=COLOURS["skip"], lw=1, ls=":", alpha=0.7)
            ax.scatter([pt.x], [0.04], transform=skip_y, marker="x", color=COLOURS["skip"], s=40)
            continue
        colour = COLOURS.get(e.verdict, "black")
        # A run stopped early holds the value of a shorter log: hollow, so it is not read
        # beside whole runs on the same axis as if it were one of them.
        early = bool(e.stopped_early)
        ax.scatter(
            [pt.x],
            [e.value],
            marker=PHASE_MARKERS.get(e.phase, "o"),
            facecolor="none" if early else colour,
            edgecolor=colour if early else "white",
            linewidth=1.4 if early else 0.6,
            s=42,
            zorder=3,
        )
    ax.axhline(report.threshold.value, color="#ef6c00", ls="--", lw=1)
    if log:
        ax.set_yscale("log")
    ax.set_xlim(-0.6, max(len(panel.commits) - 0.4, 0.6))
    measured = [pt.evaluation.commit for pt in sorted(mine, key=lambda pt: pt.evaluation.n)]
    axis_in = ax.get_position().width * ax.get_figure().get_figwidth()
    ticks = labelled(panel.commits, measured, [c for c in (culprit, merge) if c], axis_in)
    ax.set_xticks(range(len(panel.commits)), minor=True)
    ax.set_xticks(ticks)
    ends_named = {report.good.commit: " (good)", report.bad.commit: " (bad)"}
    labels = ax.set_xticklabels(
        [panel.commits[i][:LABEL_CHARS] + ends_named.get(panel.commits[i], "") for i in ticks],
        rotation=60,
        ha="right",
        family="monospace",
    )
    for i, label in zip(ticks, labels, strict=True):
        if panel.commits[i] == culprit:
            label.set_color(COLOURS["bad"])
            label.set_fontweight("bold")
    ax.grid(axis="y", alpha=0.25)
    ax.set_title(panel.title, fontsize=9, loc="left")


def _legend(
    fig: Any, report: Report, has_skip: bool, has_culprit: bool, has_early: bool = False
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def dot(colour: str, marker: str, label: str) -> Line2D:
        return Line2D([], [], ls="", marker=marker, color=colour, markersize=6, label=label)

    lower = report.threshold.worse == "lower"  # a throughput: worse when lower
    good_side, bad_side = ("above", "at or below") if lower else ("below", "at or above")
    handles: list[Any] = [
        dot(COLOURS["good"], "o", f"good ({good_side} threshold)"),
        dot(COLOURS["bad"], "o", f"bad ({bad_side})"),
    ]
    if has_skip:
        handles.append(dot(COLOURS["skip"], "x", "skipped (no value)"))
    if has_early:
        handles.append(
            Line2D([], [], ls="", marker="o", markerfacecolor="none", markeredgecolor="#555",
                   markersize=6, label="stopped early (value so far)")
        )  # fmt: skip
    handles += [
        dot("#555", PHASE_MARKERS["endpoint"], "endpoint run"),
        dot("#555", PHASE_MARKERS["bisect"], "search run"),
        dot("#555", PHASE_MARKERS["confirm"], "confirmation run"),
        Line2D([], [], color="#ef6c00", ls="--", label=f"threshold {threshold_text(report)}"),
    ]
    if has_culprit:
        handles.append(Patch(color=COLOURS["bad"], alpha=0.15, label="culprit"))
    elif _suspects(report):
        handles.append(Patch(color=SUSPECT, alpha=0.25, label="could be the culprit"))
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=8, frameon=False)


def range_svg(report: Report) -> str:
    layout = panels(report)
    placed = points(report, layout)
    values = [pt.evaluation.value for pt in placed if pt.evaluation.value is not None]
    log = _log_scale(values)
    widths = [max(len(p.commits), 8) for p in layout]  # room for a branch panel's title
    widths[0] = max(widths[0], 2 * sum(widths[1:]))
    if len(layout) > 1:  # a long first-parent range left the branch panel too narrow for
        widths[1] = max(widths[1], widths[0] // 3)  # its title ("inside merg" at 1280 px)

    def draw(fig: Any) -> None:
        fig.set_layout_engine("constrained")
        axes = fig.subplots(1, len(layout), width_ratios=widths, sharey=True, squeeze=False)[0]
        for k, (ax, panel) in enumerate(zip(axes, layout, strict=True)):
            _draw_panel(ax, report, panel, [pt for pt in placed if pt.panel == k], log)
        axes[0].set_ylabel(report.metric + (" (log scale)" if log else ""))
        has_skip = any(pt.evaluation.value is None for pt in placed)
        has_early = any(pt.evaluation.stopped_early for pt in placed)
        _legend(fig, report, has_skip, report.culprit is not None, has_early)

    height = 3.6 + 0.2 * math.ceil(len(layout) / 2)
    return svg_of(draw, 10, height)
