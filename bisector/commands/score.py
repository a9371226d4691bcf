"""`bisector score LOG...`: metrics of one run's apiserver log, and a git-bisect-run verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence

import typer

from bisector.errors import EXIT_BAD, EXIT_GOOD, EXIT_SKIP
from bisector.logs import metric_value, score_logs


def score(
    sources: Sequence[str], metric: str | None, threshold: float | None, as_json: bool
) -> int:
    scores = score_logs(sources)
    verdict: str | None = None
    code = EXIT_GOOD
    if metric is not None:
        value = metric_value(scores, metric)
        if value is None:
            verdict, code = "skip", EXIT_SKIP
        elif threshold is not None:
            verdict, code = ("bad", EXIT_BAD) if value >= threshold else ("good", EXIT_GOOD)
    if as_json:
        typer.echo(json.dumps({"metrics": scores.metrics, "verdict": verdict}, indent=2))
    else:
        for name, shown in scores.metrics.items():
            typer.echo(f"{name:<24} {shown}")
        if verdict:
            typer.echo(f"verdict: {verdict}")
    return code
