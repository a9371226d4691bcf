"""`bisector score LOG...`: metrics of one run's apiserver log, and a git-bisect-run verdict.

Exit codes (bisector.exitcodes.ScoreExit), safe under `git bisect run`, which reads 0 as
good, 125 as skip, 1-127 as bad and 128 or more as "stop":

    0    good: the metric is below --threshold (or no --threshold, outside a bisection)
    1    bad: the metric is at or above --threshold; nothing else ever exits 1
    125  no verdict: the log is missing, unreadable, corrupt, a truncated gzip, holds no
         data for the metric or in the --since/--until window, or covers less than
         --min-window
    128  a mistake in the command line or config (git bisect stops instead of believing
         it), and no --threshold while a git bisect is in progress
    129  a bug in bisector (git bisect stops)
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import typer

from bisector.config import load_config
from bisector.durations import format_duration, parse_duration
from bisector.errors import BisectorError
from bisector.exitcodes import ScoreExit
from bisector.logs import (
    METRIC_NAMES,
    RequestMetric,
    Scores,
    load_metric_definitions,
    metric_value,
    score_logs,
)


@dataclass(frozen=True)
class ScoreRequest:
    """The checked command line: every mistake in it is found before a log is read."""

    sources: tuple[str, ...]
    metric: str | None
    threshold: float | None
    since_s: float | None
    until_s: float | None
    min_window_s: float | None
    extra: dict[str, RequestMetric]


def score(
    sources: Sequence[str],
    metric: str | None,
    threshold: float | None,
    as_json: bool,
    *,
    since: str | None = None,
    until: str | None = None,
    min_window: str | None = None,
    config: Path | None = None,
) -> int:
    """Print the scores; return a ScoreExit (see the module docstring)."""
    request = _check(
        sources,
        metric=metric,
        threshold=threshold,
        since=since,
        until=until,
        min_window=min_window,
        config=config,
    )
    try:
        scores = score_logs(
            list(request.sources),
            since=request.since_s,
            until=request.until_s,
            extra_metrics=request.extra or None,
        )
    except BisectorError as exc:  # the log's problem (missing, corrupt, truncated): skip
        return _no_verdict(str(exc), as_json, request)
    except OSError as exc:  # e.g. the file vanished or a disk error mid-read
        return _no_verdict(f"cannot read the log: {exc}", as_json, request)
    reason = _no_data_reason(scores, request, since, until)
    value = metric_value(scores, request.metric) if request.metric and not reason else None
    if reason is None and request.metric is not None and value is None:
        reason = f"the log holds no data for {request.metric}"
    verdict, code = _verdict(reason, value, request.threshold)
    if as_json:
        out = {"metrics": scores.metrics, "metric": request.metric, "value": value}
        out |= {"threshold": request.threshold, "verdict": verdict, "reason": reason}
        typer.echo(json.dumps(out, indent=2))
    else:
        _print_table(
            scores,
            metric=request.metric,
            value=value,
            threshold=request.threshold,
            verdict=verdict,
            reason=reason,
        )
    if verdict is None and _bisect_in_progress():
        # Exit 0 would read as *good* to `git bisect run`: stop the bisection instead.
        raise BisectorError(
            "no --threshold: a git bisect is in progress here and exit 0 would mark this "
            "commit good; pass --metric NAME --threshold VALUE"
        )
    return code


def _check(
    sources: Sequence[str],
    *,
    metric: str | None,
    threshold: float | None,
    since: str | None,
    until: str | None,
    min_window: str | None,
    config: Path | None,
) -> ScoreRequest:
    if not sources:
        raise BisectorError("no log given; pass at least one log file, URL or -")
    if len(sources) > 1 and "-" in sources:
        raise BisectorError("stdin (-) cannot be combined with other logs; pass files instead")
    if threshold is not None and metric is None:
        from bisector.metric_registry import DEFAULT_METRIC  # (only here: a quick start)

        metric = DEFAULT_METRIC  # as `run` and `history` default to it
    if threshold is not None and not math.isfinite(threshold):
        # nan compares false with every value: the log would always score good.
        raise BisectorError(f"--threshold must be a finite number, got {threshold}")
    since_s = _duration(since, "--since")
    until_s = _duration(until, "--until")
    if since_s is not None and until_s is not None and until_s <= since_s:
        raise BisectorError(f"--until ({until}) must be later than --since ({since})")
    min_window_s = _duration(min_window, "--min-window")
    extra = load_metric_definitions(load_config(config).table("metrics")) if config else {}
    if metric is not None and metric not in METRIC_NAMES and metric not in extra:
        known = ", ".join((*METRIC_NAMES, *extra))
        raise BisectorError(f"unknown metric {metric!r}; choose one of: {known}")
    return ScoreRequest(tuple(sources), metric, threshold, since_s, until_s, min_window_s, extra)


def _duration(text: str | None, what: str) -> float | None:
    if text is None:
        return None
    seconds = parse_duration(text, what=what)
    if not math.isfinite(seconds):
        raise BisectorError(f"{what}: {text!r} is not a finite duration; write e.g. 5m")
    return seconds


def _no_data_reason(
    scores: Scores, request: ScoreRequest, since: str | None, until: str | None
) -> str | None:
    """Why the log cannot give a verdict whatever the metric, or None."""
    seen = scores.seen
    if seen is None:
        return "the log has no timestamped lines"
    if scores.window is None:
        asked = " ".join(
            f"{flag} {text}" for flag, text in (("--since", since), ("--until", until)) if text
        )
        return f"no data in the window {asked}: the log covers only {format_duration(seen.seconds)}"
    if request.min_window_s is not None and scores.window.seconds < request.min_window_s:
        return (
            f"log covers {format_duration(scores.window.seconds)} of the "
            f"{format_duration(request.min_window_s)} asked: apiserver restarted or log cut short"
        )
    return None


def _verdict(
    reason: str | None, value: float | None, threshold: float | None
) -> tuple[str | None, int]:
    if reason is not None:  # no data is never good, with or without a threshold
        return "skip", ScoreExit.NO_VERDICT
    if threshold is None or value is None:
        return None, ScoreExit.GOOD
    return ("bad", ScoreExit.BAD) if value >= threshold else ("good", ScoreExit.GOOD)


def _no_verdict(message: str, as_json: bool, request: ScoreRequest) -> int:
    if as_json:
        out: dict[str, object] = {"metrics": None, "metric": request.metric, "value": None}
        out |= {"threshold": request.threshold, "verdict": "skip", "reason": message}
        typer.echo(json.dumps(out, indent=2))
    print(f"bisector: no verdict: {message}", file=sys.stderr)
    return ScoreExit.NO_VERDICT


def _bisect_in_progress() -> bool:
    """A `git bisect` is running in the repository of the current directory."""
    from bisector.gitrepo import GitRepo

    try:
        git_dir = Path(GitRepo(Path.cwd()).repo.git_dir)
    except (BisectorError, OSError):
        return False  # not inside a repository: nothing to protect
    return (git_dir / "BISECT_START").exists()


def _shown(value: object, metric: str = "") -> str:
    """A score as people read it (bisector.numbers): each part of a table on its own line,
    so a narrow terminal wraps between them; `no data` for no value, whichever kind."""
    from bisector.numbers import NO_VALUE, format_value

    if value is None or value == {}:
        return NO_VALUE
    if isinstance(value, dict):
        if {"first", "last", "seconds"} <= value.keys():  # seen, window
            span = format_duration(float(value["seconds"]))
            return f"{span}\nfrom {value['first']}\nto   {value['last']}"
        return "\n".join(f"{k}={_shown(v, metric)}" for k, v in value.items())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_value(float(value), metric)
    return str(value)


def _print_table(
    scores: Scores,
    *,
    metric: str | None,
    value: float | None,
    threshold: float | None,
    verdict: str | None,
    reason: str | None,
) -> None:
    from rich.table import Table

    from bisector.terminal import make_console

    console = make_console()
    rows = [(name, _shown(shown, name)) for name, shown in scores.metrics.items()]
    widest = max((len(name) for name, _ in rows), default=6)
    longest = max((len(line) for _, text in rows for line in text.splitlines()), default=8)
    if console.width < widest + longest + 4:
        # Narrow: each name whole on its line, its value under it (nothing cut or folded).
        for name, text in rows:
            console.print(f"[bold]{name}[/]" if name == metric else name, highlight=False)
            for line in text.splitlines():
                console.print(f"  {line}", highlight=False, markup=False)
    else:
        table = Table(show_header=True, header_style="bold", box=None)
        table.add_column("metric", no_wrap=True)
        table.add_column("value", overflow="fold")
        for name, text in rows:
            table.add_row(f"[bold]{name}[/]" if name == metric else name, text)
        console.print(table)
    if verdict == "skip":  # whole lines, never wrapped: scripts grep them
        typer.echo(f"verdict: skip ({reason})")
    elif verdict:
        relation = ">=" if verdict == "bad" else "<"
        from bisector.numbers import format_threshold

        shown = _shown(value, metric or "")
        limit = format_threshold(threshold, metric or "") if threshold is not None else ""
        typer.echo(f"verdict: {verdict} ({metric} = {shown} {relation} {limit})")
