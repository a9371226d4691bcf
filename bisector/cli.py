"""Command-line wiring: typer declarations only; the work lives in bisector.commands.*."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import TyperException

from bisector.errors import EXIT_INTERRUPTED, EXIT_USAGE, BisectorError

app = typer.Typer(
    name="bisector",
    help="Find the commit that made a Kubernetes cluster slower.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Find the commit that made a Kubernetes cluster slower."""


@app.command("score")
def score_cmd(  # noqa: PLR0917 - typer maps parameters to options
    logs: Annotated[
        list[str],
        typer.Argument(
            help="Log files of one run (a rotated set): paths, gzip, -, gs://, https://"
        ),
    ],
    metric: Annotated[str | None, typer.Option(help="Metric the verdict is about.")] = None,
    threshold: Annotated[float | None, typer.Option(help="Bad at or above this value.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Ignore what precedes this long after the first line (5m).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Ignore what follows this long after the first line (35m).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    config: Annotated[
        Path | None, typer.Option(help="TOML file whose [metrics.NAME] tables add metrics.")
    ] = None,
) -> int:
    """Score kube-apiserver logs; exit 0 good, 1 bad, 125 no data, 2 bad input."""
    from bisector.commands.score import score

    return score(logs, metric, threshold, as_json, since=since, until=until, config=config)


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps every error to one line on stderr and an exit code."""
    try:
        result = app(args=argv, standalone_mode=False)
    except BisectorError as exc:
        print(f"bisector: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except TyperException as exc:  # usage errors: typer prints them itself with help hints
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"bisector: error: {exc.format_message()}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        print("bisector: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(result if isinstance(result, int) else 0)
