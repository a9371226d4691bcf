"""The search's timeline: each evaluation in the order it was measured, and why there."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bisector.durations import format_duration
from bisector.report.facts import Reason, relative_path, short, split_reason, value_text
from bisector.report.model import Evaluation, Report


@dataclass(frozen=True)
class Row:
    n: int
    phase: str
    commit: str
    subject: str
    started: str  # wall-clock start, UTC
    duration: str
    verdict: str
    value: str
    why: str
    window: str  # the log span the value was read from
    notes: list[str]  # stopped early, cached, launch retries, teardown errors
    logs: list[str]  # the apiserver log(s) the value was read from, relative to the run dir
    command_logs: list[str]  # relative to the run directory
    reason: Reason


def _started(e: Evaluation, days: bool) -> str:
    if not e.started_at:
        return ""
    return datetime.fromtimestamp(e.started_at, UTC).strftime(
        "%m-%d %H:%M:%S" if days else "%H:%M:%S"
    )


def _spans_days(evaluations: list[Evaluation]) -> bool:
    days = {datetime.fromtimestamp(e.started_at, UTC).date() for e in evaluations if e.started_at}
    return len(days) > 1


def window_text(e: Evaluation) -> str:
    w = e.window
    if w is None:
        return ""
    span = format_duration(w.span_s)
    if w.start is None:
        return span
    start = datetime.fromtimestamp(w.start, UTC).strftime("%m-%d %H:%M:%S")
    return f"{span} from {start}"


def _notes(e: Evaluation, parallel: bool) -> list[str]:
    notes = [f"slot {e.slot}"] if parallel else []
    if e.ran_on:
        notes.append(f"ran in {e.ran_on}")
    if e.cached:
        notes.append("cached: reused from an earlier run's measurement")
    if e.stopped_early:
        notes.append(f"stopped early: {e.stopped_early}")
    if e.launch_attempts > 1:
        notes.append(f"launched {e.launch_attempts} times (retried)")
    if e.teardown_error:
        notes.append(f"TEARDOWN FAILED: {e.teardown_error}")
    if e.load:
        notes.append(f"load: {e.load}")
    return notes


def _local_logs(report: Report, e: Evaluation) -> list[str]:
    """The evaluation's logs on this machine; after `bisector runs --prune`, those it kept."""
    local = [p for p in e.logs if "://" not in p]
    if report.pruned is None:
        return local
    return [p for p in local if (Path(report.run_dir) / p).is_file()]


def _pruned_note(report: Report, e: Evaluation) -> list[str]:
    gone = report.pruned is not None and len(_local_logs(report, e)) < len(
        [p for p in e.logs if "://" not in p]
    )
    return ["apiserver log pruned"] if gone else []


def rows(report: Report) -> list[Row]:
    ordered = sorted(report.evaluations, key=lambda e: (e.n or 0, e.started_at))
    days = _spans_days(ordered)
    parallel = report.search.parallel > 1
    return [
        Row(
            n=e.n or i,
            phase=e.phase,
            commit=short(e.commit),
            subject=e.subject,
            started=_started(e, days),
            duration=format_duration(e.duration_s),
            verdict=e.verdict,
            value=value_text(e.value, report.metric),
            why=e.why,
            window=window_text(e),
            notes=_notes(e, parallel) + _pruned_note(report, e),
            logs=[relative_path(report, p) for p in _local_logs(report, e)],
            command_logs=[relative_path(report, p) for p in e.command_logs],
            reason=split_reason(e.reason),
        )
        for i, e in enumerate(ordered, 1)
    ]


# Columns left out when no evaluation has anything in them (a short run has no notes).
OPTIONAL_COLUMNS = ("log window", "notes", "logs")


def drop_empty_columns(
    header: list[str], rows: list[list[str]], optional: tuple[str, ...]
) -> tuple[list[str], list[list[str]]]:
    keep = [
        i
        for i, name in enumerate(header)
        if name not in optional or any(row[i].strip() for row in rows)
    ]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]
