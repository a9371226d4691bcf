"""What `bisector history` prints: the run table, the range found, and the --json document.

`history_json` is the issue's shape: {"runs": [{"run", "commit", "result", "metrics"}...],
"range": {"good", "bad", "good_run", "bad_run"} or null}; a run without logs has
`"metrics": null`, one without the metric's lines has it null inside. Beside them,
"change_points": every change point of the metric, oldest first, as
`RunChange.as_json` (run, last_before_run, first_after_run, their commits, before,
after, change, p_value, direction, hunted: whether "range" came from it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bisector.ci.changepoint import p_value_text
from bisector.ci.regression import History, RegressionRange, command_text
from bisector.ci.scoring import RunScore


def history_json(scored: list[RunScore], analysis: History) -> dict[str, object]:
    found = analysis.found
    return {
        "runs": [
            {
                "run": s.run,
                "commit": s.info.commit,
                "result": s.info.result,
                "metrics": s.scores.metrics if s.scores is not None else None,
            }
            for s in scored
        ],
        "range": found.as_json() if found is not None else None,
        "change_points": [c.as_json(analysis.hunted(c)) for c in analysis.changes],
    }


def _date(epoch: float | None) -> str:
    """The run's start, `-` when unknown (metadata checks it is a plausible date)."""
    if epoch is None:
        return "-"
    try:
        return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")
    except (ValueError, OverflowError, OSError):
        return "-"


def _number(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.6g}"


def _result(score: RunScore, latest: int | None) -> str:
    if score.info.result:
        return score.info.result
    # No finished.json: still running when newer than latest-build.txt.
    return "running" if latest is None or score.run > latest else "unknown"


def render_table(
    scored: list[RunScore], metric: str, found: RegressionRange | None, latest: int | None
) -> str:
    rows = [("run", "date", "result", "commit", metric, "")]
    notes = []
    for s in scored:
        value = s.value(metric)
        shown = _number(value) if value is not None else s.status(metric).split(":")[0]
        mark = ""
        if found is not None and s.run == found.good.run:
            mark = "<- last good"
        elif found is not None and s.run == found.bad.run:
            mark = "<- first bad"
        commit = (s.info.commit or "-")[:14]
        rows.append((str(s.run), _date(s.info.started), _result(s, latest), commit, shown, mark))
        if s.problem and s.problem.startswith("unreadable"):
            notes.append(f"run {s.run}: {s.problem}")
        notes += [f"run {s.run}: {p}; ignored" for p in s.info.problems]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [
        "  ".join(
            [
                r[0].rjust(widths[0]),
                r[1].ljust(widths[1]),
                r[2].ljust(widths[2]),
                r[3].ljust(widths[3]),
                r[4].rjust(widths[4]),
                r[5],
            ]
        ).rstrip()
        for r in rows
    ]
    return "\n".join(lines + notes)


def _relative(change: float | None) -> str:
    return f" ({change:+.0%})" if change is not None else ""


def render_changes(analysis: History) -> str:
    """Every change point, oldest first; the one the range came from is marked."""
    if not analysis.changes:
        return f"change points in {analysis.metric}: none"
    lines = [f"change points in {analysis.metric} (the newest regression is hunted first):"]
    for c in analysis.changes:
        point = c.point
        mark = "  <- hunted" if analysis.hunted(c) else ""
        lines.append(
            f"  runs {c.before.run}..{c.after.run}: {_number(point.before)} -> "
            f"{_number(point.after)}{_relative(point.change)}, {point.direction}, "
            f"{p_value_text(point.p_value)}{mark}"
        )
    return "\n".join(lines)


def render_range(found: RegressionRange | None, metric: str, argv: list[str] | None) -> str:
    if found is None:
        return (
            f"no regression in {metric} over these runs "
            "(a step needs at least 2 bad runs after it; a lone bad run is noise)"
        )
    step = found.step
    lines = [
        f"regression in {metric}: {_number(step.before)} -> {_number(step.after)} "
        f"(threshold {_number(step.threshold)}, {step.threshold_source}"
        + (f", {p_value_text(step.p_value)})" if step.threshold_source != "given" else ")"),
        f"  last good: run {found.good.run}, commit {found.good_commit or '-'}",
        f"  first bad: run {found.bad.run}, commit {found.bad_commit or '-'}",
    ]
    if argv is None:
        lines.append(f"cannot bisect: {found.why_not_bisectable()}")
    else:
        lines += ["bisect the commits between them with:", f"  {command_text(argv)}"]
    return "\n".join(lines)
