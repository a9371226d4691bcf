"""`bisector score LOG...`: metrics of one run's apiserver log, and a git-bisect-run verdict."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import typer

from bisector.config import load_config
from bisector.durations import parse_duration
from bisector.errors import EXIT_BAD, EXIT_GOOD, EXIT_SKIP, BisectorError
from bisector.logs import Scores, load_metric_definitions, metric_value, score_logs


def score(
    sources: Sequence[str],
    metric: str | None,
    threshold: float | None,
    as_json: bool,
    *,
    since: str | None = None,
    until: str | None = None,
    config: Path | None = None,
) -> int:
    """Exit 0 good (below threshold), 1 bad (at or above), 125 no data for the metric."""
    if threshold is not None and metric is None:
        raise BisectorError("--threshold needs --metric NAME (the metric it applies to)")
    if threshold is not None and not math.isfinite(threshold):
        # nan compares false with every value: the log would always score good.
        raise BisectorError(f"--threshold must be a finite number, got {threshold}")
    since_s = None if since is None else parse_duration(since, what="--since")
    until_s = None if until is None else parse_duration(until, what="--until")
    if since_s is not None and until_s is not None and until_s <= since_s:
        raise BisectorError(f"--until ({until}) must be later than --since ({since})")
    extra = load_metric_definitions(load_config(config).table("metrics")) if config else None
    scores = score_logs(sources, since=since_s, until=until_s, extra_metrics=extra)
    value = metric_value(scores, metric) if metric is not None else None
    verdict, code = _verdict(metric, value, threshold)
    if as_json:
        out = {"metrics": scores.metrics, "metric": metric, "value": value}
        out |= {"threshold": threshold, "verdict": verdict}
        typer.echo(json.dumps(out, indent=2))
    else:
        _print_table(scores, metric, value, threshold, verdict)
    return code


def _verdict(
    metric: str | None, value: float | None, threshold: float | None
) -> tuple[str | None, int]:
    if metric is None:
        return None, EXIT_GOOD
    if value is None:
        return "skip", EXIT_SKIP  # no data is never good
    if threshold is None:
        return None, EXIT_GOOD
    return ("bad", EXIT_BAD) if value >= threshold else ("good", EXIT_GOOD)


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        if not value:
            return "none"
        return ", ".join(f"{k}={_shown(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _print_table(
    scores: Scores,
    metric: str | None,
    value: float | None,
    threshold: float | None,
    verdict: str | None,
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    for name, shown in scores.metrics.items():
        table.add_row(f"[bold]{name}[/]" if name == metric else name, _shown(shown))
    console = Console(soft_wrap=False)
    console.print(table)
    if verdict == "skip":
        console.print(f"verdict: skip (the log holds no data for {metric})")
    elif verdict:
        relation = ">=" if verdict == "bad" else "<"
        console.print(
            f"verdict: {verdict} ({metric} = {_shown(value)} {relation} {_shown(threshold)})"
        )
