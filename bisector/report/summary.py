"""The end-of-run evidence, printed by `run`, `demo` and `nightly` alike."""

from __future__ import annotations

from pathlib import Path

from bisector.report.model import Report


def _value(value: float | None) -> str:
    return "no data" if value is None else f"{value:g}"


def summary_lines(report: Report) -> list[str]:
    """Endpoints, threshold and how it was set, culprit vs parent, confidence, skips, reports."""
    metric = report.metric
    lines: list[str] = []
    culprit = report.culprit
    if culprit is not None:
        lines.append(f"culprit: {culprit.commit} {culprit.subject}")
        pr = f"PR #{culprit.pr}" if culprit.pr else "no PR"
        inside = f", merged as {culprit.merge.commit[:12]}" if culprit.merge else ""
        lines.append(f"  {pr}{inside}; author {culprit.author}, {culprit.date}")
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
    lines.append(f"  {metric} at good {report.good.commit[:12]}: {_value(report.good.value)}")
    lines.append(f"  {metric} at bad  {report.bad.commit[:12]}: {_value(report.bad.value)}")
    lines.append(f"  threshold {report.threshold.value:g} ({report.threshold.how})")
    if culprit is not None:
        lines.append(
            f"  culprit {_value(culprit.value)} vs its parent {culprit.parent.commit[:12]} "
            f"{_value(culprit.parent.value)}; confirmed by measuring both again: "
            + ("yes" if culprit.confirmed else "NO")
        )
        if culprit.confidence is not None:
            lines.append(f"  confidence: {culprit.confidence:.4f}")
    skipped = [e for e in report.evaluations if e.verdict == "skip"]
    lines.append(
        f"  {len(report.evaluations)} evaluations over {report.range_size} "
        + ("first-parent commits" if report.first_parent else "commits")
        + (f", {len(skipped)} skipped" if skipped else "")
    )
    for e in skipped:
        lines.append(f"  skipped {e.commit[:12]} {e.subject}: {e.reason}")
    for failure in report.teardown_failures:
        lines.append(
            f"  TEARDOWN FAILED for {failure.commit[:12]}: {failure.error}; something may still "
            f"be running: bisector cleanup --run-dir {report.run_dir}"
        )
    run_dir = Path(report.run_dir)
    lines.append(f"report: {run_dir / 'report.md'} and {run_dir / 'report.html'}")
    return lines
