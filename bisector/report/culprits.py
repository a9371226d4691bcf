"""What the report says of each culprit beyond the first's evidence: its revert check, its
share of the regression, and where inside a PR it lies. Texts for report.md,
report.html, the run's summary and the action block alike."""

from __future__ import annotations

from bisector.numbers import format_value
from bisector.report.facts import short, threshold_text
from bisector.report.model import Culprit, Report, RevertCheck

# Below this share of the step from good to bad, a culprit is said to explain only part.
PART = 0.8


def names(commits: list[str]) -> str:
    return ", ".join(short(c) for c in commits)


def revert_text(report: Report, check: RevertCheck) -> str:
    """One sentence: what the bad endpoint measured with the culprits reverted."""
    metric = report.metric
    reverted = names(check.reverted)
    bad = f"{short(check.base)}'s {format_value(report.bad.value, metric)} (bad)"
    where = f"reverting {reverted} on bad {short(check.base)}"
    if check.outcome == "conflict":
        files = ", ".join(check.conflict_files) or "no file named"
        return f"{where} does not apply (conflict in {files}): the revert could not be measured"
    if check.outcome == "not measured":
        return f"{where}: could not be measured ({check.reason})"
    runs = ", ".join(format_value(v, metric) for v in check.runs)
    value = f"{format_value(check.value, metric)} ({check.verdict}; runs: {runs})"
    built = f" [built as {short(check.built)}]" if check.built else ""
    if check.outcome == "restores":
        return f"{where}: {value} against {bad}: the revert restores the good value{built}"
    return (
        f"{where}: {value} against {bad}: the revert does NOT restore the good value "
        f"(threshold {threshold_text(report)}){built}"
    )


def share_text(report: Report, culprit: Culprit) -> str:
    """`81% of the step from good 1 to bad 1,884 (by its revert: 1,884 -> 356)`."""
    if culprit.share is None:
        return ""
    metric = report.metric
    step = (
        f"{culprit.share:.0%} of the step from good {format_value(report.good.value, metric)} "
        f"to bad {format_value(report.bad.value, metric)}"
    )
    if culprit.share_basis == "revert" and culprit.revert is not None:
        before = _before(report, culprit)
        after = format_value(culprit.revert.value, metric)
        how = f"by its revert on bad: {before} -> {after}"
    else:
        how = (
            f"by its own step: parent {format_value(culprit.parent.value, metric)} -> "
            f"{format_value(culprit.value, metric)}"
        )
    part = "; it explains only part of the regression" if culprit.share < PART else ""
    return f"{step} ({how}){part}"


def _before(report: Report, culprit: Culprit) -> str:
    """The bad endpoint's value before this culprit's revert: with the earlier ones
    reverted (their revert check), or as measured."""
    earlier = [c for c in report.culprits if c.hunt < culprit.hunt and c.revert is not None]
    value = earlier[-1].revert.value if earlier and earlier[-1].revert else report.bad.value
    return format_value(value, report.metric)


def inside_text(culprit: Culprit) -> str:
    """Where inside the culprit merge's branch the first bad commit lies."""
    inside = culprit.inside
    if inside is None:
        return ""
    pr = f"PR #{culprit.pr}" if culprit.pr else "the merged branch"
    text = (
        f"the merge is the culprit, confirmed against its first parent; inside {pr} the first "
        f"bad commit lies after {short(inside.good)} (good) and at or before "
        f"{short(inside.bad)} (bad)"
    )
    if inside.unmeasured:
        count = len(inside.unmeasured)
        these = "this commit" if count == 1 else f"these {count} commits"
        text += f"; {these} between could not be measured (see the skips): "
        text += names(inside.unmeasured)
    return text


def hunt_text(culprit: Culprit) -> str:
    """How a culprit past the first was found."""
    if culprit.hunt == 1:
        return ""
    reverted = names(culprit.reverted) if culprit.reverted else "the earlier culprits"
    return f"found by search {culprit.hunt}, with {reverted} reverted in every candidate"


def revert_command(culprit: Culprit) -> str:
    """The git command that reverts the culprit as the revert check did."""
    if culprit.is_merge:
        return f"git revert -m 1 {culprit.commit}"
    return f"git revert {culprit.commit}"
