"""The end-of-run evidence, printed by `run`, `demo` and `nightly` alike."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from bisector.report.conclusive import lead_lines
from bisector.report.costs import cost_summary_lines, eta_text
from bisector.report.culprits import hunt_text, inside_text, revert_text, share_text
from bisector.report.facts import (
    confidence_text,
    mark_took,
    measured_elsewhere,
    measured_runs_text,
    pruned_text,
    runs_text,
    same_tree_text,
    search_text,
    short,
    split_reason,
    threshold_how,
    threshold_text,
)
from bisector.report.facts import value_text as _value
from bisector.report.model import Report
from bisector.report.smoking_gun import drawn_log_dirs
from bisector.report.wording import same_tree_plain

SKIP_OUTPUT_LINES = 3  # of the failing command's output, under each skip


def summary_lines(report: Report) -> list[str]:
    """Endpoints, threshold and how it was set, culprit vs parent, confidence, skips, reports."""
    metric = report.metric
    # First, loudly: a cluster that may still be running (and costing money).
    lines = [
        f"TEARDOWN FAILED for {short(f.commit)}: {f.error}; something may still be running: "
        f"bisector cleanup --run-dir {report.run_dir}"
        for f in report.teardown_failures
    ]
    culprit = report.culprit
    if culprit is not None:
        # The answer first: the culprit and whether measuring it again bore it out.
        settled = "confirmed" if culprit.confirmed else "NOT confirmed (see below)"
        lines.append(f"culprit: {culprit.commit} {culprit.subject}; {settled}")
        pr = f"PR #{culprit.pr}" if culprit.pr else "no PR"
        merged = culprit.merge is not None and culprit.merge.commit != culprit.commit
        inside = f", merged as {culprit.merge.commit[:12]}" if merged and culprit.merge else ""
        lines.append(f"  {pr}{inside}; author {culprit.author}, {culprit.date}")
        if where := inside_text(culprit):
            lines.append(f"  {where}")
        for later in report.culprits[1:]:
            lines.append(f"culprit {later.hunt}: {later.commit} {later.subject}")
            lines.append(f"  {hunt_text(later)}")
    elif report.conclusive is not None:
        # What the run did establish, the commits it could be and what to do next.
        lines += lead_lines(report)
    elif report.status == "unsure" and report.search.likely_range is not None:
        likely = report.search.likely_range
        lines.append(
            f"unsure: the evaluation budget ran out at confidence "
            f"{report.search.confidence or 0:.3f}; the culprit is among these "
            f"{len(likely.commits)} commits with probability {likely.probability:.3f}:"
        )
        lines += [f"  {c}" for c in likely.commits[:20]]
    else:
        lines.append(
            "no single culprit: it could be any of these (the others could not be measured):"
        )
        lines += [f"  {c}" for c in report.candidates]
    lines.append("evidence:")
    good, bad = report.good, report.bad
    lines.append(
        f"  {metric} at good {short(good.commit)}: {_value(good.value, metric)} "
        f"({runs_text(good.runs, metric)})"
    )
    lines.append(
        f"  {metric} at bad  {short(bad.commit)}: {_value(bad.value, metric)} "
        f"({runs_text(bad.runs, metric)})"
    )
    lines.append(f"  threshold {threshold_text(report)} ({report.threshold.how})")
    if report.threshold.how == "given":
        lines.append(f"    the threshold was {threshold_how(report)}")
    if culprit is not None:
        lines.append(
            f"  culprit {_value(culprit.value, metric)} vs its parent "
            f"{culprit.parent.commit[:12]} {_value(culprit.parent.value, metric)}; confirmed by "
            "measuring both again: " + ("yes" if culprit.confirmed else "NO")
        )
        lines += [f"    not confirmed: {why}" for why in culprit.unconfirmed]
        lines.append(
            f"    every run: culprit {measured_runs_text(report, culprit.commit)}; "
            f"parent {measured_runs_text(report, culprit.parent.commit)}"
        )
        if same := same_tree_text(report, culprit.commit):
            early = _stopped_early(report, same)
            lines.append(f"    {same_tree_plain(same, 'the culprit')}{early}")
        lines += _culprits_evidence(report)
    lines.append(f"  confidence: {confidence_text(report)}")
    skipped = [e for e in report.evaluations if e.verdict == "skip"]
    lines.append(f"  {search_text(report)}")
    for e in skipped:
        reason = split_reason(e.reason)
        said = reason.summary or "no reason"
        if measured := measured_elsewhere(report, e):
            lines.append(
                f"  a run of {short(e.commit)} {e.subject} failed: {said}; "
                f"measured in another run: {measured}"
            )
        else:
            lines.append(f"  skipped {short(e.commit)} {e.subject}: {said}")
        lines += [f"    | {line}" for line in reason.output[-SKIP_OUTPUT_LINES:]]
    for mark in report.marks:
        note = f" ({mark.note})" if mark.note else ""
        took = mark_took(report, mark)
        lines.append(f"  marked {mark.verdict} by hand: {short(mark.commit)}{note}; {took}")
    if report.cost is not None:
        lines += cost_summary_lines(report.cost)
    if report.eta is not None:
        lines.append(eta_text(report.eta))
    run_dir = Path(report.run_dir)
    if run_dir.is_dir():
        lines.append(f"disk: {disk_line(run_dir, report.repo, drawn_log_dirs(report))}")
    if report.pruned is not None:
        lines.append(f"logs: {pruned_text(report)}")
    lines.append(f"report: {run_dir / 'report.md'} and {run_dir / 'report.html'}")
    if report.action:
        lines += ["what to do (paste into the issue):", *(f"  {line}" for line in report.action)]
    return lines


def _culprits_evidence(report: Report) -> list[str]:
    """Each culprit's revert check and share, and what the culprits may leave unexplained."""
    lines = []
    for c in report.culprits:
        said = f"culprit {c.hunt} {short(c.commit)}" if len(report.culprits) > 1 else "culprit"
        if c.hunt > 1:
            lines.append(
                f"  {said} {_value(c.value, report.metric)} vs its parent "
                f"{short(c.parent.commit)} {_value(c.parent.value, report.metric)} "
                f"({hunt_text(c)}); confirmed: " + ("yes" if c.confirmed else "NO")
            )
        if c.revert is not None:
            lines.append(f"  revert check: {revert_text(report, c.revert)}")
        if share := share_text(report, c):
            lines.append(f"  {said}'s share: {share}")
    if not report.revert_check and report.culprit is not None:
        lines.append("  revert check: off ([run] revert_check = false)")
    if report.unexplained:
        lines.append(f"  NOT ALL EXPLAINED: {report.unexplained}")
    return lines


def _stopped_early(report: Report, same_tree: str) -> str:
    """Why a same-tree commit's figure stands far from the culprit's own: its search run
    ended early, once the log was clearly on one side, so it counts less of the warmup."""
    early = [
        e
        for e in report.evaluations
        if e.stopped_early and e.commit[:12] in same_tree and e.phase == "bisect"
    ]
    if not early:
        return ""
    return (
        f", in a search run stopped early ({early[-1].stopped_early}): a part of the "
        "warmup, not comparable with the full-length runs above"
    )


def disk_line(run_dir: Path, repo: str = "", keep: Collection[Path] = ()) -> str:
    """What the run directory holds, and what `runs --prune` would free (the logs but those
    of the evaluation directories `keep`, the smoking gun's)."""
    from bisector.runfiles import disk_use, size_text

    use = disk_use(run_dir, keep)
    if not use.logs_bytes:
        return f"{size_text(use.total_bytes)} in {run_dir}"
    kept = " and the smoking gun's logs" if keep else ""
    return (
        f"{size_text(use.total_bytes)} in {run_dir}, of which logs {size_text(use.logs_bytes)} "
        f"(gzipped; `{prune_command(repo)}` drops them and keeps the reports{kept})"
    )


def prune_command(checkout: str) -> str:
    """`bisector runs --prune`, with the run's --repo when it is not the current directory's
    repository (the demo's run, read from the project's checkout): as said, it works here."""
    import shlex

    repo = Path(checkout).resolve() if checkout else None
    here = Path.cwd().resolve()
    if repo is None or here == repo or repo in here.parents:
        return "bisector runs --prune"
    return f"bisector runs --repo {shlex.quote(str(repo))} --prune"
