"""The report's facts as short texts, shared by report.md, report.html and the run's summary.

Each renderer decides how to mark them up; what they say is decided here once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bisector.metrics.direction import Worse, is_bad
from bisector.numbers import NO_VALUE, format_threshold, format_value
from bisector.report.model import Evaluation, Mark, PrunedLogs, Report
from bisector.report.wording import same_tree_plain


def short(commit: str) -> str:
    return commit[:12]


def value_text(value: float | None, metric: str = "") -> str:
    """A value of `metric` as people read it (bisector.numbers); `no data` for none."""
    return format_value(value, metric)


def threshold_text(report: Report) -> str:
    return format_threshold(report.threshold.value, report.metric, report.threshold.worse)


def runs_text(runs: list[float], metric: str = "") -> str:
    """Every run's value, so a reader sees the spread and not only the summary value."""
    if not runs:
        return "no run"
    values = ", ".join(format_value(v, metric) for v in runs)
    return f"1 run: {values}" if len(runs) == 1 else f"{len(runs)} runs: {values}"


def threshold_how(report: Report) -> str:
    how = report.threshold.how
    if how == "given":
        return "given by the configuration (not calibrated)"
    return how


def headline(report: Report) -> str:
    culprit = report.culprit
    if culprit is not None:
        if culprit.confirmed:
            return "Culprit found and confirmed"
        return "Culprit found but NOT confirmed by measuring it and its parent again"
    if report.status == "unsure":
        return "Unsure: the evaluation budget ran out before the search was sure"
    return "No single culprit: commits next to it could not be measured"


def why_culprit(report: Report) -> str:
    """One sentence: why this commit and not its neighbour."""
    culprit = report.culprit
    if culprit is None:
        return ""
    threshold = threshold_text(report)
    parent = short(culprit.parent.commit)
    below = _count(report, culprit.parent.commit, above=False)
    above = _count(report, culprit.commit, above=True)
    good_side, bad_side = (
        ("above", "at or below")
        if report.threshold.worse == "lower"
        else (
            "below",
            "at or above",
        )
    )
    text = (
        f"Its parent {parent} measured {values_of(report, culprit.parent.commit)} "
        f"({below} {good_side} the threshold {threshold}) and this commit measured "
        f"{values_of(report, culprit.commit)} ({above} {bad_side} it): the regression "
        "came in with this commit"
    )
    if culprit.merges:
        text += (
            f", which entered the first-parent history with merge {short(culprit.merges[0].commit)}"
        )
    if same := same_tree_text(report, culprit.commit):
        text += f" ({same_tree_plain(same)})"
    if culprit.confirmed:
        return text + "; measuring both again agreed."
    return text + "; measuring both again did NOT agree, so treat it as a suspect only."


def same_tree_text(report: Report, commit: str) -> str | None:
    """`same tree as 45a9d215875d, measured there: 4,715` when the search's verdict on
    `commit` came from runs of another commit with its tree (a same-tree merge)."""
    return report.same_tree_verdicts.get(commit)


def _count(report: Report, commit: str, *, above: bool) -> str:
    values = [e.value for e in runs_of(report, commit) if e.value is not None]
    worse: Worse = "lower" if report.threshold.worse == "lower" else "higher"
    hits = sum(is_bad(v, report.threshold.value, worse) == above for v in values)
    return f"{hits} of {len(values)} runs" if len(values) != 1 else f"{hits} of 1 run"


def values_of(report: Report, commit: str) -> str:
    values = [
        value_text(e.value, report.metric) for e in runs_of(report, commit) if e.value is not None
    ]
    if not values:
        return f"nothing ({NO_VALUE} in any run of it)"
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def confidence_text(report: Report) -> str:
    search = report.search
    if search.mode != "posterior":
        return "not modelled (plain git bisect verdicts, no error rate given)"
    how = (
        f"verdict error rate {search.error_rate:g}"
        if search.likelihood == "verdict"
        else "likelihood fitted to the endpoints' runs"
    )
    confidence = "unknown" if search.confidence is None else f"{search.confidence:.4f}"
    sure = "" if search.sure else ", below the target"
    return f"{confidence} (probabilistic bisection, {how}{sure})"


def measured_elsewhere(report: Report, skipped: Evaluation) -> str:
    """A skipped run's commit measured in another run: `45 (bisect)`; "" when no run of it
    gave a value (the commit itself is skipped, not only one of its runs)."""
    runs = [e for e in runs_of(report, skipped.commit) if e.value is not None]
    return ", ".join(f"{value_text(e.value, report.metric)} ({e.phase})" for e in runs)


def search_text(report: Report) -> str:
    skips = [e for e in report.evaluations if e.verdict == "skip"]
    # A commit is skipped when no run of it was measured; a failed run of a commit that
    # another run measured is a retry, not a skip.
    never = {e.commit for e in skips if not measured_elsewhere(report, e)}
    retried = sum(1 for e in skips if e.commit not in never)
    kind = "first-parent commits" if report.first_parent else "commits"
    text = f"{len(report.evaluations)} evaluations over {report.range_size} {kind}"
    if never:
        text += f", {len(never)} skipped"
    if retried:
        text += f", {retried} failed {'run' if retried == 1 else 'runs'} of commits measured again"
    if report.search.parallel > 1:
        text += f", {report.search.parallel} at a time"
    return text


def runs_of(report: Report, commit: str, reverted: Sequence[str] | None = None) -> list[Evaluation]:
    """The runs of `commit` as measured with `reverted` reverted in it (default: none,
    the commit as it is; a later hunt measures it with earlier culprits reverted)."""
    wanted = list(reverted or [])
    return [e for e in report.evaluations if e.commit == commit and list(e.reverted) == wanted]


def measured_runs_text(report: Report, commit: str, reverted: Sequence[str] | None = None) -> str:
    """`45 (bisect), 49 (confirm)`: every run of a commit with the phase it was measured in."""
    runs = runs_of(report, commit, reverted)
    if not runs:
        return "not measured"
    return ", ".join(f"{value_text(e.value, report.metric)} ({e.phase})" for e in runs)


@dataclass(frozen=True)
class Reason:
    """A skip reason cut where it is safe: the summary never ends inside a `quoted command`."""

    summary: str
    output: list[str]  # the failing command's last lines, when the reason carries them


_FAILURE = re.compile(r"`|failed|exited|timed out|killed", re.IGNORECASE)


def _output_start(text: str) -> int:
    """Index of the first `: ` outside backtick quotes after the first quoted command
    (or anywhere, without one), or -1."""
    quoted, after = False, "`" not in text
    for i, char in enumerate(text):
        if char == "`":
            quoted = not quoted
            after = after or not quoted
        elif after and not quoted and text.startswith(": ", i):
            return i
    return -1


def split_reason(reason: str | None, max_lines: int = 8) -> Reason:
    """`make` exited 2: a | b | c  ->  summary "`make` exited 2", output [a, b, c].

    The failing command's output follows the first newline, or the first `: ` after the
    first `quoted command` (or anywhere when nothing is quoted) when what precedes it says
    a command failed (proc.CommandError and backends.steps.tail join the output's lines
    with ` | `). Other reasons stay whole.
    """
    if not reason:
        return Reason("", [])
    text = reason.strip()
    head, sep, rest = text.partition("\n")
    if not sep:
        cut = _output_start(text)
        if cut < 0 or not _FAILURE.search(text[:cut]):
            return Reason(text, [])
        head, rest = text[:cut], text[cut + 2 :]
    lines = [line.strip() for chunk in rest.split("\n") for line in chunk.split(" | ")]
    lines = [line for line in lines if line]
    return Reason(head.strip(), lines[-max_lines:])


def relative_path(report: Report, path: str) -> str:
    """A path as the report (which lives in the run directory) links it."""
    if not report.run_dir or not Path(path).is_absolute():
        return path
    return os.path.relpath(path, report.run_dir)


def pruned_when(pruned: PrunedLogs) -> str:
    """`on YYYY-MM-DD HH:MM UTC by bisector runs --prune`."""
    at = datetime.fromtimestamp(pruned.at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"on {at} by `bisector runs --prune`"


def pruned_text(report: Report) -> str | None:
    """What pruning took from this report, said where its links lead nowhere; None when
    the logs were never pruned."""
    pruned = report.pruned
    if pruned is None:
        return None
    from bisector.runfiles import size_text

    kept = {Path(d).absolute() for d in pruned.kept}
    runs = sorted(
        e.n for e in report.evaluations if e.eval_dir and Path(e.eval_dir).absolute() in kept
    )
    named = [f"#{n}" for n in runs]
    which = (
        f"kept those of run{'s' if len(named) > 1 else ''} "
        + (" and ".join([", ".join(named[:-1]), named[-1]]) if len(named) > 1 else named[0])
        + ", which the smoking gun draws"
        if named
        else "kept none"
    )
    return (
        f"the runs' apiserver logs were pruned {pruned_when(pruned)} "
        f"({size_text(pruned.freed_bytes)} dropped): {which}; the other runs' values and "
        "command logs stay, their apiserver logs are gone"
    )


def mark_took(report: Report, mark: Mark) -> str:
    """Whether the search took a person's verdict (`bisector mark`): a mark on a commit
    the search never picked decided nothing."""
    if report.verdicts.get(mark.commit) == mark.verdict:
        return f"the search took it as {mark.verdict}"
    return "the search never picked that commit, so the mark decided nothing"


def skipped_by_hand(report: Report) -> list[Mark]:
    """The skip marks the search took: commits skipped without a run of their own."""
    return [
        m for m in report.marks if m.verdict == "skip" and report.verdicts.get(m.commit) == "skip"
    ]


def no_skips_text(report: Report) -> str:
    """What to say when no run was a skip: marks the search took are skips too."""
    by_hand = skipped_by_hand(report)
    if not by_hand:
        return "No commit was skipped."
    commits = ", ".join(short(m.commit) for m in by_hand)
    return f"No run was a skip; skipped by hand (marked above): {commits}."
