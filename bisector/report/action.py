"""What to do: the revert command, the PR link and the evidence it rests on, in one block
a person pastes into an issue (the report's and the run summary's last lines).

For confirmed culprits; an unconfirmed one is a suspect, and the block says to measure
it again instead. Without a culprit, the block is what the run established and what to
do next (bisector.report.conclusive).
"""

from __future__ import annotations

from bisector.numbers import format_value
from bisector.report.answer import profile_line
from bisector.report.conclusive import lead_lines
from bisector.report.culprits import inside_text, names, revert_command, revert_text, share_text
from bisector.report.facts import measured_runs_text, short, threshold_text
from bisector.report.links import commit_url, pr_url
from bisector.report.model import Culprit, Report


def action_lines(report: Report) -> list[str]:
    """The block's lines (plain text: pasted as is, or in a code block)."""
    confirmed = [c for c in report.culprits if c.confirmed]
    if not confirmed:
        if report.culprit is not None:
            return [
                f"{short(report.culprit.commit)} is a suspect, not confirmed: measure it and its "
                f"parent again (rerun the same command) before reverting anything"
            ]
        if report.conclusive is not None:
            return [_regression(report), *lead_lines(report, limit=None)]
        return []
    lines = [_regression(report)]
    several = len(confirmed) > 1
    for i, culprit in enumerate(confirmed, 1):
        lines += ["", *_culprit_block(report, culprit, i if several else 0)]
    if report.unexplained:
        lines += ["", f"Not all explained: {report.unexplained}"]
    return lines


def _regression(report: Report) -> str:
    metric = report.metric
    return (
        f"Regression in {metric}: good {short(report.good.commit)} "
        f"{format_value(report.good.value, metric)} -> bad {short(report.bad.commit)} "
        f"{format_value(report.bad.value, metric)} (threshold {threshold_text(report)}, "
        f"{report.backend} backend)"
    )


def _culprit_block(report: Report, culprit: Culprit, number: int) -> list[str]:
    head = f"Culprit {number}: " if number else "Culprit: "
    lines = [f"{head}{culprit.commit} {culprit.subject}"]
    url = pr_url(report.remote, culprit.pr)
    if culprit.pr:
        merged = ""
        if culprit.merge is not None and culprit.merge.commit != culprit.commit:
            merged = f", merged as {short(culprit.merge.commit)}"
        lines.append(f"  PR #{culprit.pr}{merged}" + (f": {url}" if url else ""))
    elif (link := commit_url(report.remote, culprit.commit)) is not None:
        lines.append(f"  {link}")
    lines.append(f"  author {culprit.author}, {culprit.date}")
    if where := inside_text(culprit):
        lines.append(f"  {where}")
    lines.append(f"  revert: {revert_command(culprit)}")
    reverted = culprit.reverted
    with_ = f" (with {names(reverted)} reverted)" if reverted else ""
    lines.append(
        f"  confirmed{with_}: culprit {measured_runs_text(report, culprit.commit, reverted)}; "
        f"parent {short(culprit.parent.commit)} "
        f"{measured_runs_text(report, culprit.parent.commit, culprit.parent.reverted)}"
    )
    if culprit.revert is not None:
        lines.append(f"  revert check: {revert_text(report, culprit.revert)}")
    elif not report.revert_check:
        lines.append("  revert check: off ([run] revert_check = false)")
    if share := share_text(report, culprit):
        lines.append(f"  share: {share}")
    lines += [f"  profile diff ({d.kind}): {profile_line(d)}" for d in culprit.profiles]
    return lines
