"""`bisector history --job JOB`: score past CI runs from GCS and narrow the range to bisect.

Prints a table (run, date, result, commit, metric), every change point of the
metric (p-value, regression or improvement), the last good and first bad run of
the newest regression, and the `bisector run --good ... --bad ...` command for the
commits between them. `--bisect` then starts that command in this process, through the CLI
(`start_bisection`), so its output, Ctrl-C handling and teardown are the same
as when the user types it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import typer

from bisector.ci import gcs
from bisector.ci.cache import ScoreCache, default_cache_dir
from bisector.ci.regression import (
    RegressionRange,
    analyse,
    bisect_argv,
    command_text,
    metric_higher_is_worse,
)
from bisector.ci.report import history_json, render_changes, render_range, render_table
from bisector.ci.runs import (
    DEFAULT_BUCKET,
    JobRef,
    latest_build,
    list_runs,
    parse_span,
    select_runs,
)
from bisector.ci.scoring import (
    DEFAULT_WORKERS,
    RunScore,
    ScoreSettings,
    ci_source_problem,
    score_runs,
)
from bisector.errors import BisectorError
from bisector.metric_registry import MetricRegistry, check_threshold
from bisector.settings import DEFAULT_METRIC, read_config

MAX_WORKERS = 64  # runs scored at once (threads, each reading GCS)


@dataclass(frozen=True)
class HistoryOptions:
    job: str
    bucket: str = DEFAULT_BUCKET
    runs: str | None = None  # "A..B"
    last: int | None = None
    metric: str = DEFAULT_METRIC
    threshold: float | None = None
    as_json: bool = False
    bisect: bool = False
    master: str | None = None
    cache_dir: Path | None = None  # None: default_cache_dir()
    use_cache: bool = True
    workers: int = DEFAULT_WORKERS
    config: Path | None = None  # its [metrics.NAME] count; passed on to `bisector run`
    repo: Path | None = None  # passed on to `bisector run`


def history(options: HistoryOptions) -> int:
    if not 1 <= options.workers <= MAX_WORKERS:
        raise BisectorError(f"--workers must be from 1 to {MAX_WORKERS}, got {options.workers}")
    config = read_config(options.config)
    metrics = MetricRegistry.from_config(config)
    metrics.check(options.metric, "--metric")
    if (why := ci_source_problem(metrics, options.metric)) is not None:
        raise BisectorError(why)
    if options.runs is not None and options.last is not None:
        raise BisectorError("pass either --runs A..B or --last N, not both")
    if options.last is not None and options.last < 1:
        raise BisectorError("--last must be at least 1")
    check_threshold(options.threshold, "--threshold")
    span = parse_span(options.runs) if options.runs is not None else None
    client = gcs.client()
    job = JobRef(options.bucket, options.job)
    chosen = select_runs(list_runs(client, job), span=span, last=options.last)
    latest = latest_build(client, job)
    cache = ScoreCache((options.cache_dir or default_cache_dir()) if options.use_cache else None)
    progress = Progress(len(chosen))
    typer.echo(f"scoring {len(chosen)} runs of {job} ({options.workers} at a time)", err=True)
    scored = score_runs(
        client,
        job,
        chosen,
        cache,
        ScoreSettings(
            master=options.master,
            extra_metrics=metrics.definitions or None,
            source=metrics.source_metric(options.metric),
        ),
        workers=options.workers,
        on_done=progress.done,
    )
    analysis = analyse(
        scored,
        options.metric,
        threshold=options.threshold,
        higher_is_worse=metric_higher_is_worse(metrics, options.metric),
    )
    found = analysis.found
    argv = _bisect_argv(found, options)
    if options.as_json:
        typer.echo(json.dumps(history_json(scored, analysis), indent=2))
    else:
        typer.echo(
            f"{job}: {len(chosen)} runs ({chosen[0]}..{chosen[-1]}), latest build "
            f"{latest if latest is not None else 'unknown'}"
        )
        typer.echo(render_table(scored, options.metric, found, latest))
        if all(s.value(options.metric) is None for s in scored):
            why = (
                "no CL2 summary in their artifacts/, or not the data item asked for"
                if metrics.source_of(options.metric) == "cl2"
                else "logs missing, or without the lines it needs (request lines need the "
                "apiserver at --v=3)"
            )
            typer.echo(f"no run has data for {options.metric}: {why}")
        else:
            typer.echo(render_changes(analysis))
            typer.echo(render_range(found, options.metric, argv))
    if options.bisect:
        if argv is None:
            typer.echo("--bisect: nothing to bisect", err=True)
            return 0
        assert found is not None
        typer.echo(f"starting: {command_text(argv)}", err=True)
        return start_bisection(found, options, command_text(argv))
    return 0


def _bisect_argv(found: RegressionRange | None, options: HistoryOptions) -> list[str] | None:
    if found is None or found.why_not_bisectable() is not None:
        return None
    extra = [
        *(["--config", str(options.config)] if options.config else []),
        *(["--repo", str(options.repo)] if options.repo else []),
    ]
    return bisect_argv(found, extra=extra)


def start_bisection(found: RegressionRange, options: HistoryOptions, command: str) -> int:
    """`bisector run` on the range found, in this process, through the run API."""
    from bisector.commands.run import build_settings, run
    from bisector.settings import RunFlags

    assert found.good_commit and found.bad_commit
    settings = build_settings(
        good=found.good_commit,
        bad=found.bad_commit,
        repo=options.repo,
        config=options.config,
        run_dir=None,
        flags=RunFlags(metric=found.metric),
        resume_command=command,
    )
    return run(settings)


class Progress:
    """One stderr line per run as it finishes (plain text: readable on a TTY and in a log).

    Runs finish on scoring threads, so the counter and the line are under a lock.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0
        self._lock = threading.Lock()

    def done(self, score: RunScore) -> None:
        if score.scores is None:
            what = (score.problem or "no logs")[:160]
        else:
            what = "cached" if score.cached else "scored"
        with self._lock:
            self.finished += 1
            typer.echo(f"  [{self.finished}/{self.total}] run {score.run}: {what}", err=True)
