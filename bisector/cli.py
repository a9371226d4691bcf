"""Command-line wiring: typer declarations only; the work lives in bisector.commands.*,
the process's entry and exit codes in bisector.entry."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from bisector.backends.registry import backend_names
from bisector.clihelp import CONTEXT_SETTINGS, Command
from bisector.exitcodes import (
    CleanupExit,
    DemoExit,
    DoctorExit,
    EvaluateExit,
    HistoryExit,
    MarkExit,
    NightlyExit,
    RunExit,
    RunsExit,
    ScoreExit,
    StatusExit,
    describe,
)
from bisector.settings import RUN_FLAGS, RunFlag, RunFlags

app = typer.Typer(
    name="bisector",
    # Plain click help: flags read as flags and bracketed text such as [metrics.NAME] stays.
    rich_markup_mode=None,
    help="Find the commit that made a Kubernetes cluster slower.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # --install-completion / --show-completion: bash, zsh, fish, PowerShell (typer's own).
    add_completion=True,
    context_settings=CONTEXT_SETTINGS,
)


def _help(text: str, table: type[IntEnum]) -> str:
    """A command's help: what it does, then every exit code it can end with."""
    return f"{text}\n\n{describe(table)}."


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # only here: ~0.05 s of every command's start

        typer.echo(f"bisector {version('bisector')}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = None,
) -> None:
    """Find the commit that made a Kubernetes cluster slower."""


@contextlib.contextmanager
def _no_blas_threads() -> Iterator[None]:
    """numpy's OpenBLAS starts a thread per core when numpy is imported: ~0.08 s of CPU of
    every `score` (measured on 2 cores), for linear algebra bisector never does (its numpy
    is integer and byte work). OpenBLAS reads the variable once, when numpy loads; it is
    removed again after, so processes started later get the environment as it was."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


_SCORE_HELP = (
    "Score kube-apiserver logs against a threshold. Safe under `git bisect run`: 1 only "
    "when the metric is at or above --threshold; 125 (git skips) whenever the log cannot "
    "give a verdict: missing, unreadable, corrupt or truncated gzip, not an apiserver log, "
    "no data for the metric, --since/--until past its end, shorter than --min-window; 128 "
    "(git stops) for a mistake in the command line or config, and for no --threshold while "
    "a git bisect is in progress; 129 (git stops) for a bug; 130 for any termination signal. "
    "Output that cannot be written (a pipe closed early, as in `git bisect run ... | head`, "
    "a closed or full stdout) never changes the verdict's code; without --threshold, where "
    "the scores are the product, it is 131."
)


# -v of `run` and `demo`: what their default output leaves to the run directory's log.
VERBOSE_HELP = (
    "Also print each phase as it begins (build, launch, warmup, collect, teardown), the "
    "search's progress and the builds ahead; without it, one line per evaluation (the "
    "run directory's progress.log always has them all)."
)


@app.command(cls=Command, name="score", help=_help(_SCORE_HELP, ScoreExit))
def score_cmd(  # noqa: PLR0917 - typer maps parameters to options
    logs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="LOG",
            help="Log files of one run (a rotated set): paths, gzip, -, gs://, https://; or "
            "one directory: a CL2 report dir, or a run's logs with metrics-before/after.prom",
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Metric the verdict is about (default with --threshold: conflicts, as for "
            "run and history; without --threshold every metric is printed).",
        ),
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
    with _no_blas_threads():  # the scorer's numpy is imported here
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
    cls=Command,
    name="cleanup",
    help=_help("Tear down the clusters a crashed or killed run left up.", CleanupExit),
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
    cls=Command,
    name="evaluate",
    help=_help(
        'Evaluate one commit as a Kubernetes Job\'s pod does ([run] executor = "kubernetes", '
        "docs/jobs.md): fetch it from the spec's git URL, build, launch, warm up, collect and "
        "score it with the run's backend, and hand the measurement and its files back.",
        EvaluateExit,
    ),
)
def evaluate_cmd(
    spec: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The evaluation's spec (JSON, made by the driving bisector); default: "
            "$BISECTOR_EVALUATION.",
        ),
    ] = None,
    work: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Where the checkout and the evaluation's files go (default: a new temporary "
            "directory).",
        ),
    ] = None,
) -> int:
    from bisector.commands.evaluate import evaluate

    return evaluate(spec, work)


@app.command(
    cls=Command,
    name="doctor",
    help=_help("Check tools, credentials and config; say what to install or set.", DoctorExit),
)
def doctor_cmd(  # noqa: PLR0917 - typer maps parameters to options
    backend: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help=f"The backend to check: {backend_names()} (default: the config's [run] "
            "backend, else sim; the others are listed as available).",
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
            help="Kubernetes checkout the run will bisect (default: .): procs checks the Go it "
            "needs; --rehearse rehearses its HEAD, in a scratch clone.",
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
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (schema: docs/json.md) instead of text.")
    ] = False,
) -> int:
    from bisector.commands.doctor import doctor

    return doctor(backend, config, rehearse=rehearse, repo=repo, keep=keep, as_json=as_json)


# A declared key's type as its option's: a duration is read from its text, as in the file.
_OPTION_TYPES: dict[str, Any] = {
    "str": str,
    "duration": str,
    "int": int,
    "float": float,
    "bool": bool,
    "str_list": list[str],
}


def _flag_parameter(flag: RunFlag) -> inspect.Parameter:
    """The typer parameter of a declared key: its name, type and doc as the flag's; None
    when the flag is not given, so the file's value (or the key's default) holds."""
    key, declared = flag.key, flag.flag
    option = "--" + flag.name.replace("_", "-")
    info: Any
    if declared.positional:
        info = typer.Argument(metavar=declared.metavar, help=key.doc, show_default=False)
    elif key.kind == "bool":
        info = typer.Option(option, help=key.doc)  # a switch: given, it is true
    else:
        info = typer.Option(option, metavar=declared.metavar, help=key.doc)
    annotation = cast("Any", Annotated)[_OPTION_TYPES[key.kind] | None, info]
    return inspect.Parameter(
        flag.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
    )


def _with_run_flags(command: Callable[..., int]) -> Callable[..., int]:
    """`command` with one typer parameter per key declared as a flag of `bisector run`
    (bisector.settings.RUN_FLAGS) in place of its `flags`, which gets them as one RunFlags:
    a key declared with a flag is an option with nothing written here."""
    parameters: list[inspect.Parameter] = []
    for own in inspect.signature(command, eval_str=True).parameters.values():
        if own.name == "flags":
            parameters += [_flag_parameter(flag) for flag in RUN_FLAGS.values()]
        else:
            parameters.append(own.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def with_flags(**values: object) -> int:
        given = {name: values.pop(name) for name in RUN_FLAGS}
        return command(**values, flags=RunFlags(**given))

    # What typer reads: the signature, and the annotations it resolves names in.
    with_flags.__signature__ = inspect.Signature(parameters, return_annotation=int)  # type: ignore[attr-defined]
    with_flags.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": int}
    return with_flags


@app.command(
    cls=Command,
    name="run",
    help=_help(
        "Bisect GOOD..BAD: find the commit that made the metric worse. Every termination "
        "signal (Ctrl-C, SIGTERM, SIGHUP from a closed terminal, SIGQUIT, ...) tears down "
        "what is up and exits 130; more signals during the teardown are reported, not "
        "obeyed. Output that cannot be written (`bisector run ... | head -1`, a closed "
        "terminal, a full disk) never changes the exit code: the run goes on, and its "
        "report is in the run directory.",
        RunExit,
    ),
)
@_with_run_flags
def run_cmd(
    good: Annotated[str, typer.Option(metavar="COMMIT", help="A commit that scores good.")],
    bad: Annotated[str, typer.Option(metavar="COMMIT", help="A later commit that scores bad.")],
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="TOML config: [run], [search], [backends.NAME], [metrics.NAME] "
            "(default: none, so the sim backend, the demo's simulator).",
        ),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The repository to bisect (default: the current one)."),
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Journal, logs and report (default: inside .git)."),
    ] = None,
    *,
    flags: RunFlags,  # one option per declared key (_with_run_flags)
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan only.")] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Start the run directory over (its earlier run is kept in DIR/earlier/).",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="End with the summary as JSON on stdout (schema: docs/json.md); progress "
            "stays on stderr.",
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help=VERBOSE_HELP)] = False,
) -> int:
    from bisector.commands.run import build_settings, run

    settings = build_settings(
        good=good, bad=bad, repo=repo, config=config, run_dir=run_dir, flags=flags
    )
    return run(settings, is_dry_run=dry_run, fresh=fresh, as_json=as_json, verbose=verbose)


@app.command(
    cls=Command,
    name="demo",
    help=_help(
        "Bisect a synthetic June-2017 Kubernetes history on the built-in simulator.", DemoExit
    ),
)
def demo_cmd(
    *,
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
    culprits: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="Regressions planted: 1, or 2 (an earlier, smaller one too: both are hunted).",
        ),
    ] = 1,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help=VERBOSE_HELP)] = False,
) -> int:
    from bisector.commands.demo import demo

    return demo(
        directory,
        nodes=nodes,
        seed=seed,
        duration=duration,
        prs=prs,
        culprits=culprits,
        verbose=verbose,
    )


@app.command(
    cls=Command,
    name="status",
    help=_help("Progress of the bisections of a repository.", StatusExit),
)
def status_cmd(
    repo: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The repository whose runs to show (default: .)."),
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Show only this run directory.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (schema: docs/json.md) instead of text.")
    ] = False,
) -> int:
    from bisector.commands.status import status

    return status(repo, run_dir, as_json=as_json)


@app.command(
    cls=Command,
    name="history",
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
            workers=workers,
            config=config,
            repo=repo,
        )
    )


@app.command(
    cls=Command,
    name="nightly",
    help=_help("Score new CI runs and hunt each new regression once.", NightlyExit),
)
def nightly_cmd(
    config: Annotated[
        Path, typer.Option(metavar="FILE", help="Nightly config (see configs/nightly.toml).")
    ],
) -> int:
    from bisector.commands.nightly import nightly

    return nightly(config)


@app.command(
    cls=Command,
    name="mark",
    help=_help("Record a person's verdict on a commit; the run takes it.", MarkExit),
)
def mark_cmd(
    commit: Annotated[str, typer.Argument(metavar="COMMIT", help="The commit to mark.")],
    verdict: Annotated[str, typer.Argument(metavar="VERDICT", help="good, bad or skip.")],
    note: Annotated[str, typer.Option(metavar="TEXT", help="Why (shown in the report).")] = "",
    repo: Annotated[
        Path | None, typer.Option(metavar="DIR", help="The repository (default: .).")
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The run to mark in (default: the latest)."),
    ] = None,
) -> int:
    from bisector.commands.mark import mark

    return mark(commit, verdict, note=note, repo=repo, run_dir=run_dir)


@app.command(
    cls=Command,
    name="runs",
    help=_help(
        "List a repository's runs and the disk they use; prune or remove old ones.", RunsExit
    ),
)
def runs_cmd(
    repo: Annotated[
        Path | None, typer.Option(metavar="DIR", help="The repository (default: .).")
    ] = None,
    remove: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Remove this run directory.")
    ] = None,
    remove_finished: Annotated[
        bool, typer.Option("--remove-finished", help="Remove every finished run.")
    ] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Drop the logs of every finished run; keep its journal, reports, command "
            "logs and the smoking gun's logs (the reports say when).",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (schema: docs/json.md) instead of text.")
    ] = False,
) -> int:
    from bisector.commands.runs import runs

    return runs(repo, remove=remove, remove_finished=remove_finished, prune=prune, as_json=as_json)
