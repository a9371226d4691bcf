"""Command-line wiring: typer declarations only; the work lives in bisector.commands.*."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import TyperException

from bisector.backends.registry import backend_names
from bisector.errors import EXIT_INTERRUPTED, EXIT_USAGE, BisectorError
from bisector.exitcodes import for_command

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
    min_window: Annotated[
        str | None,
        typer.Option(help="No verdict (125) if the log covers less than this (30m)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    config: Annotated[
        Path | None, typer.Option(help="TOML file whose \\[metrics.NAME] tables add metrics.")
    ] = None,
) -> int:
    """Score kube-apiserver logs. Exit 0 good, 1 bad (at or above --threshold), 125 no
    verdict (log missing, corrupt, truncated, no data, window empty or shorter than
    --min-window: git bisect skips), 128 bad command line or config, or no --threshold
    during a git bisect (git bisect stops), 129 internal error."""
    from bisector.commands.score import score

    return score(
        logs,
        metric,
        threshold,
        as_json,
        since=since,
        until=until,
        min_window=min_window,
        config=config,
    )


@app.command("cleanup")
def cleanup_cmd(
    run_dir: Annotated[
        Path, typer.Option("--run-dir", help="The crashed run's directory (holds resources.json).")
    ] = Path(),
) -> int:
    """Tear down the clusters a crashed run recorded; exit 1 if some remain."""
    from bisector.commands.cleanup import cleanup

    return cleanup(run_dir)


@app.command("doctor")
def doctor_cmd(
    backend: Annotated[
        str | None, typer.Option(help=f"Check only what this backend needs: {backend_names()}.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="Config file to validate.")] = None,
) -> int:
    """Check tools, credentials and config; say what to install or set."""
    from bisector.commands.doctor import doctor

    return doctor(backend, config)


@app.command("run")
def run_cmd(  # noqa: PLR0917 - typer maps each parameter to a flag
    good: Annotated[str, typer.Option(help="A commit that scores good.")],
    bad: Annotated[str, typer.Option(help="A later commit that scores bad.")],
    paths: Annotated[
        list[str] | None, typer.Argument(help="Only commits touching these paths (after --).")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="TOML config file.")] = None,
    repo: Annotated[Path, typer.Option(help="The repository to bisect.")] = Path(),
    run_dir: Annotated[
        Path | None, typer.Option(help="Journal, logs and report (default: inside .git).")
    ] = None,
    backend: Annotated[str | None, typer.Option(help=f"Backend: {backend_names()}.")] = None,
    metric: Annotated[str | None, typer.Option(help="Metric the verdict is about.")] = None,
    threshold: Annotated[
        float | None, typer.Option(help="Bad at or above this (default: calibrated).")
    ] = None,
    warmup: Annotated[str | None, typer.Option(help="Wait after launch, e.g. 5m.")] = None,
    repeats: Annotated[int | None, typer.Option(help="Runs per commit (majority vote).")] = None,
    first_parent: Annotated[
        bool | None, typer.Option("--first-parent", help="Follow only merges (PRs).")
    ] = None,
    launch_attempts: Annotated[
        int | None, typer.Option(help="Launch tries before a commit is skipped.")
    ] = None,
    error_rate: Annotated[
        float | None,
        typer.Option(help="Chance a run's verdict is wrong; > 0: noise-aware search."),
    ] = None,
    likelihood: Annotated[
        str | None,
        typer.Option(help="verdict (uses --error-rate) or metric (fit to the endpoints' runs)."),
    ] = None,
    parallel: Annotated[
        int | None, typer.Option(help="Candidates evaluated at once (backend slots).")
    ] = None,
    max_evaluations: Annotated[
        int | None, typer.Option(help="Budget of a noise-aware search (endpoints included).")
    ] = None,
    upload: Annotated[
        str | None, typer.Option(help="gs://bucket/prefix to copy the run's logs and report to.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan only.")] = False,
) -> int:
    """Bisect GOOD..BAD: exit 0 culprit confirmed, 3 inconclusive, 2 bad input, 130 interrupted."""
    from bisector.commands.run import build_options, run

    overrides: dict[str, object] = {
        "backend": backend,
        "metric": metric,
        "threshold": threshold,
        "warmup": warmup,
        "repeats": repeats,
        "first_parent": first_parent,
        "launch_attempts": launch_attempts,
        "upload": upload,
        "paths": paths or None,
        "error_rate": error_rate,
        "likelihood": likelihood,
        "parallel": parallel,
        "max_evaluations": max_evaluations,
    }
    options = build_options(
        good=good, bad=bad, repo=repo, config=config, run_dir=run_dir, overrides=overrides
    )
    return run(options, is_dry_run=dry_run)


@app.command("demo")
def demo_cmd(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Where to put the demo (default: ./bisector-demo)."),
    ] = None,
    nodes: Annotated[int, typer.Option(help="Hollow nodes in each simulated cluster.")] = 5000,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic history and simulator.")] = 0,
    duration: Annotated[
        str, typer.Option(help="Simulated cluster time per evaluation, e.g. 2m.")
    ] = "2m",
    prs: Annotated[int, typer.Option(help="PR merges in the synthetic history.")] = 40,
) -> int:
    """Bisect a synthetic June-2017 Kubernetes history on the built-in simulator."""
    from bisector.commands.demo import demo

    return demo(directory, nodes=nodes, seed=seed, duration=duration, prs=prs)


@app.command("status")
def status_cmd(
    repo: Annotated[Path, typer.Option(help="The repository whose runs to show.")] = Path(),
    run_dir: Annotated[Path | None, typer.Option(help="Show only this run directory.")] = None,
) -> int:
    """Progress of the bisections of a repository."""
    from bisector.commands.status import status

    return status(repo, run_dir)


@app.command("history")
def history_cmd(  # noqa: PLR0917 - typer maps each parameter to a flag
    job: Annotated[str, typer.Option(help="CI job, e.g. ci-kubernetes-kubemark-gce-scale.")],
    bucket: Annotated[
        str, typer.Option(help="kubernetes-ci-logs; kubernetes-jenkins before the move.")
    ] = "kubernetes-ci-logs",
    runs: Annotated[str | None, typer.Option(help="Runs A..B (inclusive).")] = None,
    last: Annotated[int | None, typer.Option(help="Only the last N runs.")] = None,
    metric: Annotated[str, typer.Option(help="Metric to track.")] = "conflicts",
    threshold: Annotated[
        float | None, typer.Option(help="Bad at or above this (default: change point).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bisect: Annotated[
        bool, typer.Option("--bisect", help="Start `bisector run` on the range found.")
    ] = False,
    master: Annotated[
        str | None, typer.Option(help="artifacts/ directory of the master (default: guessed).")
    ] = None,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Score cache (default ~/.cache/bisector/history).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Score every run again.")] = False,
    workers: Annotated[int, typer.Option(help="Runs scored at once.")] = 4,
    config: Annotated[
        Path | None, typer.Option(help="Config passed on to `bisector run` (--bisect).")
    ] = None,
    repo: Annotated[
        Path | None, typer.Option(help="Repository passed on to `bisector run` (--bisect).")
    ] = None,
) -> int:
    """Score past CI runs from GCS; print the regression range and the bisect command."""
    from bisector.commands.history import HistoryOptions, history

    run_args = [
        *(["--config", str(config)] if config else []),
        *(["--repo", str(repo)] if repo else []),
    ]
    return history(
        HistoryOptions(
            job=job,
            bucket=bucket,
            runs=runs,
            last=last,
            metric=metric,
            threshold=threshold,
            as_json=as_json,
            bisect=bisect,
            master=master,
            cache_dir=cache_dir,
            use_cache=not no_cache,
            workers=max(1, workers),
            run_args=run_args,
        )
    )


@app.command("nightly")
def nightly_cmd(
    config: Annotated[Path, typer.Option(help="Nightly config (see configs/nightly.toml).")],
) -> int:
    """Score new CI runs, hunt new regressions: exit 0 nothing new, 3 culprit, 4 not bisected."""
    from bisector.commands.nightly import nightly

    return nightly(config)


def _command(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    args = sys.argv[1:] if argv is None else argv
    return next((arg for arg in args if not arg.startswith("-")), None)


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps every error to one line on stderr and an exit code.

    The codes come from the command's table (bisector.exitcodes): for `score`, run under
    `git bisect run`, a usage error is 128 and a bug 129, so neither can read as *bad*.
    """
    codes = for_command(_command(argv))
    usage = int(codes["USAGE"])
    try:
        result = app(args=argv, standalone_mode=False)
    except BisectorError as exc:
        print(f"bisector: error: {exc}", file=sys.stderr)
        # A plain BisectorError is the generic "bad input" (2): the command's own code for
        # it. So is a code outside the command's table or one of its verdicts: an error is
        # never `score`'s 1, which git bisect run reads as *bad*.
        known = {int(m) for m in codes if m.name not in ("GOOD", "BAD") and int(m) != 0}
        code = exc.exit_code
        sys.exit(usage if code == EXIT_USAGE or code not in known else code)
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
        sys.exit(usage)
    except KeyboardInterrupt:
        print("bisector: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except OSError as exc:  # a path the user gave that nothing checked first: still one line
        where = f": {exc.filename}" if exc.filename else ""
        print(
            f"bisector: error: {exc.strerror or exc}{where}; check the path and its permissions",
            file=sys.stderr,
        )
        sys.exit(usage)
    except Exception as exc:  # a bug: its own code, never one that reads as a verdict
        if os.environ.get("BISECTOR_DEBUG"):
            traceback.print_exc()
        print(
            f"bisector: internal error (a bug in bisector; BISECTOR_DEBUG=1 shows the "
            f"traceback): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        sys.exit(int(codes["INTERNAL"]))
    sys.exit(result if isinstance(result, int) else 0)
