"""Command-line wiring: typer declarations only; the work lives in bisector.commands.*."""

from __future__ import annotations

import os
import sys
import traceback
from enum import IntEnum
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import TyperException

from bisector.backends.registry import backend_names
from bisector.errors import EXIT_INTERRUPTED, EXIT_USAGE, BisectorError
from bisector.exitcodes import (
    CleanupExit,
    DemoExit,
    DoctorExit,
    HistoryExit,
    MarkExit,
    NightlyExit,
    RunExit,
    RunsExit,
    ScoreExit,
    StatusExit,
    describe,
    for_command,
)

app = typer.Typer(
    name="bisector",
    # Plain click help: flags read as flags and bracketed text such as [metrics.NAME] stays.
    rich_markup_mode=None,
    help="Find the commit that made a Kubernetes cluster slower.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _help(text: str, table: type[IntEnum]) -> str:
    """A command's help: what it does, then every exit code it can end with."""
    return f"{text}\n\n{describe(table)}."


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bisector {package_version('bisector')}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = None,
) -> None:
    """Find the commit that made a Kubernetes cluster slower."""


_SCORE_HELP = (
    "Score kube-apiserver logs against a threshold. Safe under `git bisect run`: 1 only "
    "when the metric is at or above --threshold; 125 (git skips) whenever the log cannot "
    "give a verdict: missing, unreadable, corrupt or truncated gzip, not an apiserver log, "
    "no data for the metric, --since/--until past its end, shorter than --min-window; 128 "
    "(git stops) for a mistake in the command line or config, and for no --threshold while "
    "a git bisect is in progress; 129 (git stops) for a bug."
)


@app.command("score", help=_help(_SCORE_HELP, ScoreExit))
def score_cmd(  # noqa: PLR0917 - typer maps parameters to options
    logs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Log files of one run (a rotated set): paths, gzip, -, gs://, https://; or "
            "one directory: a CL2 report dir, or a run's logs with metrics-before/after.prom"
        ),
    ] = None,
    metric: Annotated[
        str | None, typer.Option(metavar="NAME", help="Metric the verdict is about.")
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(metavar="VALUE", help="Bad at or above this value.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION", help="Ignore what precedes this long after the first line (5m)."
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION", help="Ignore what follows this long after the first line (35m)."
        ),
    ] = None,
    min_window: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION", help="No verdict (125) if the log covers less than this (30m)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    config: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="TOML file whose [metrics.NAME] tables add metrics."),
    ] = None,
    metrics_before: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The apiserver's /metrics at the window's start."),
    ] = None,
    metrics_after: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The apiserver's /metrics at the window's end."),
    ] = None,
) -> int:
    from bisector.commands.score import score

    return score(
        logs or [],
        metric,
        threshold,
        as_json,
        since=since,
        until=until,
        min_window=min_window,
        config=config,
        metrics_before=metrics_before,
        metrics_after=metrics_after,
    )


@app.command(
    "cleanup", help=_help("Tear down the clusters a crashed or killed run left up.", CleanupExit)
)
def cleanup_cmd(
    run_dir: Annotated[
        Path,
        typer.Option(
            "--run-dir",
            metavar="DIR",
            help="The run's directory (holds its journal and resources).",
        ),
    ] = Path(),
) -> int:
    from bisector.commands.cleanup import cleanup

    return cleanup(run_dir)


@app.command(
    "doctor",
    help=_help("Check tools, credentials and config; say what to install or set.", DoctorExit),
)
def doctor_cmd(
    backend: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help=f"Check only what this backend needs: {backend_names()}."
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Config file to validate.")
    ] = None,
    rehearse: Annotated[
        bool,
        typer.Option(
            "--rehearse",
            help="gce only: then run one whole evaluation of the config (kube-up, build, "
            "start-kubemark, log copy, stop-kubemark, kube-down) with the --repo checkout's "
            "real scripts on the GCE twin, a stand-in for GCE: no real cloud call, nothing "
            "billed. Says the first failing stage, calls the twin does not model, and what "
            "is left up.",
        ),
    ] = False,
    repo: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Kubernetes checkout to rehearse: its HEAD, in a scratch clone (default: .).",
        ),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep",
            help="Keep the rehearsal's directory (every twin call, the twin's state, the "
            "scripts' checkout) and print where; it is removed otherwise.",
        ),
    ] = False,
) -> int:
    from bisector.commands.doctor import doctor

    return doctor(backend, config, rehearse=rehearse, repo=repo, keep=keep)


@app.command(
    "run", help=_help("Bisect GOOD..BAD: find the commit that made the metric worse.", RunExit)
)
def run_cmd(  # noqa: PLR0917 - typer maps each parameter to a flag
    good: Annotated[str, typer.Option(metavar="COMMIT", help="A commit that scores good.")],
    bad: Annotated[str, typer.Option(metavar="COMMIT", help="A later commit that scores bad.")],
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[-- PATH...]", help="Only commits touching these paths.", show_default=False
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="TOML config: [run], [search], [backends.NAME], [metrics.NAME] "
            "(default: none, so the sim backend, the demo's simulator).",
        ),
    ] = None,
    repo: Annotated[Path, typer.Option(metavar="DIR", help="The repository to bisect.")] = Path(),
    run_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Journal, logs and report (default: inside .git)."),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(metavar="NAME", help=f"Backend: {backend_names()} (default sim).")
    ] = None,
    metric: Annotated[
        str | None, typer.Option(metavar="NAME", help="Metric the verdict is about.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(metavar="VALUE", help="Bad at or above this (default: calibrated)."),
    ] = None,
    warmup: Annotated[
        str | None, typer.Option(metavar="DURATION", help="Wait after launch, e.g. 5m.")
    ] = None,
    repeats: Annotated[
        int | None, typer.Option(metavar="N", help="Runs per commit (majority vote).")
    ] = None,
    first_parent: Annotated[
        bool | None, typer.Option("--first-parent", help="Follow only merges (PRs).")
    ] = None,
    launch_attempts: Annotated[
        int | None, typer.Option(metavar="N", help="Launch tries before a commit is skipped.")
    ] = None,
    error_rate: Annotated[
        float | None,
        typer.Option(metavar="P", help="Chance a run's verdict is wrong; > 0: noise-aware search."),
    ] = None,
    likelihood: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="verdict (uses --error-rate) or metric (fit to the endpoints' runs).",
        ),
    ] = None,
    parallel: Annotated[
        int | None,
        typer.Option(metavar="K", help="Candidates evaluated at once (backend slots)."),
    ] = None,
    max_evaluations: Annotated[
        int | None,
        typer.Option(metavar="N", help="Budget of a noise-aware search (endpoints included)."),
    ] = None,
    upload: Annotated[
        str | None,
        typer.Option(
            metavar="GS_URL", help="gs://bucket/prefix to copy the run's logs and report to."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan only.")] = False,
) -> int:
    from bisector.commands.run import build_settings, run
    from bisector.settings import RunFlags

    flags = RunFlags(
        backend=backend,
        metric=metric,
        threshold=threshold,
        warmup=warmup,
        repeats=repeats,
        first_parent=first_parent,
        launch_attempts=launch_attempts,
        upload=upload,
        paths=tuple(paths) if paths else None,
        error_rate=error_rate,
        likelihood=likelihood,
        parallel=parallel,
        max_evaluations=max_evaluations,
    )
    settings = build_settings(
        good=good, bad=bad, repo=repo, config=config, run_dir=run_dir, flags=flags
    )
    return run(settings, is_dry_run=dry_run)


@app.command(
    "demo",
    help=_help(
        "Bisect a synthetic June-2017 Kubernetes history on the built-in simulator.", DemoExit
    ),
)
def demo_cmd(
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", metavar="DIR", help="Where to put the demo (default: ./bisector-demo)."
        ),
    ] = None,
    nodes: Annotated[
        int, typer.Option(metavar="N", help="Hollow nodes in each simulated cluster.")
    ] = 5000,
    seed: Annotated[
        int, typer.Option(metavar="N", help="Seed of the synthetic history and simulator.")
    ] = 0,
    duration: Annotated[
        str,
        typer.Option(metavar="DURATION", help="Simulated cluster time per evaluation, e.g. 2m."),
    ] = "2m",
    prs: Annotated[int, typer.Option(metavar="N", help="PR merges in the synthetic history.")] = 40,
) -> int:
    from bisector.commands.demo import demo

    return demo(directory, nodes=nodes, seed=seed, duration=duration, prs=prs)


@app.command("status", help=_help("Progress of the bisections of a repository.", StatusExit))
def status_cmd(
    repo: Annotated[
        Path, typer.Option(metavar="DIR", help="The repository whose runs to show.")
    ] = Path(),
    run_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Show only this run directory.")
    ] = None,
) -> int:
    from bisector.commands.status import status

    return status(repo, run_dir)


@app.command(
    "history",
    help=_help(
        "Score past CI runs from GCS; print the regression range and the bisect command.",
        HistoryExit,
    ),
)
def history_cmd(  # noqa: PLR0917 - typer maps each parameter to a flag
    job: Annotated[
        str, typer.Option(metavar="JOB", help="CI job, e.g. ci-kubernetes-kubemark-gce-scale.")
    ],
    bucket: Annotated[
        str,
        typer.Option(
            metavar="BUCKET", help="kubernetes-ci-logs; kubernetes-jenkins before the move."
        ),
    ] = "kubernetes-ci-logs",
    runs: Annotated[str | None, typer.Option(metavar="A..B", help="Runs A..B (inclusive).")] = None,
    last: Annotated[int | None, typer.Option(metavar="N", help="Only the last N runs.")] = None,
    metric: Annotated[str, typer.Option(metavar="NAME", help="Metric to track.")] = "conflicts",
    threshold: Annotated[
        float | None,
        typer.Option(metavar="VALUE", help="Bad at or above this (default: change point)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bisect: Annotated[
        bool, typer.Option("--bisect", help="Start `bisector run` on the range found.")
    ] = False,
    master: Annotated[
        str | None,
        typer.Option(metavar="DIR", help="artifacts/ directory of the master (default: guessed)."),
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Score cache (default ~/.cache/bisector/history)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Score every run again.")] = False,
    workers: Annotated[int, typer.Option(metavar="N", help="Runs scored at once.")] = 4,
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="TOML config: its [metrics.NAME] tables; passed on with --bisect."
        ),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Repository passed on to `bisector run` (--bisect)."),
    ] = None,
) -> int:
    from bisector.commands.history import HistoryOptions, history

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
            config=config,
            repo=repo,
        )
    )


@app.command(
    "nightly", help=_help("Score new CI runs and hunt each new regression once.", NightlyExit)
)
def nightly_cmd(
    config: Annotated[
        Path, typer.Option(metavar="FILE", help="Nightly config (see configs/nightly.toml).")
    ],
) -> int:
    from bisector.commands.nightly import nightly

    return nightly(config)


def _command(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    args = sys.argv[1:] if argv is None else argv
    return next((arg for arg in args if not arg.startswith("-")), None)


@app.command(
    "mark", help=_help("Record a person's verdict on a commit; the run takes it.", MarkExit)
)
def mark_cmd(
    commit: Annotated[str, typer.Argument(metavar="COMMIT", help="The commit to mark.")],
    verdict: Annotated[str, typer.Argument(metavar="VERDICT", help="good, bad or skip.")],
    note: Annotated[str, typer.Option(metavar="TEXT", help="Why (shown in the report).")] = "",
    repo: Annotated[Path, typer.Option(metavar="DIR", help="The repository.")] = Path(),
    run_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The run to mark in (default: the latest)."),
    ] = None,
) -> int:
    from bisector.commands.mark import mark

    return mark(commit, verdict, note=note, repo=repo, run_dir=run_dir)


@app.command("runs", help=_help("List a repository's runs; remove old ones.", RunsExit))
def runs_cmd(
    repo: Annotated[Path, typer.Option(metavar="DIR", help="The repository.")] = Path(),
    remove: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Remove this run directory.")
    ] = None,
    remove_finished: Annotated[
        bool, typer.Option("--remove-finished", help="Remove every finished run.")
    ] = False,
) -> int:
    from bisector.commands.runs import runs

    return runs(repo, remove=remove, remove_finished=remove_finished)


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
