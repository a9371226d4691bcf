"""What `bisector history` prints: the run table, the range found, and the --json document.

`history_json` is exactly the issue's shape: {"runs": [{"run", "commit", "result",
"metrics"}...], "range": {"good", "bad", "good_run", "bad_run"} or null}; a run
without logs has `"metrics": null`, one without the metric's lines has it null inside.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bisector.ci.regression import RegressionRange, command_text
from bisector.ci.scoring import RunScore


def history_json(scored: list[RunScore], found: RegressionRange | None) -> dict[str, object]:
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


def render_range(found: RegressionRange | None, metric: str, argv: list[str] | None) -> str:
    if found is None:
        return (
            f"no regression in {metric} over these runs "
            "(a step needs at least 2 bad runs after it; a lone bad run is noise)"
        )
    step = found.step
    lines = [
        f"regression in {metric}: {_number(step.before)} -> {_number(step.after)} "
        f"(threshold {_number(step.threshold)}, {step.threshold_source})",
        f"  last good: run {found.good.run}, commit {found.good_commit or '-'}",
        f"  first bad: run {found.bad.run}, commit {found.bad_commit or '-'}",
    ]
    if argv is None:
        lines.append(f"cannot bisect: {found.why_not_bisectable()}")
    else:
        lines += ["bisect the commits between them with:", f"  {command_text(argv)}"]
    return "\n".join(lines)
