"""`bisector score LOG...`: metrics of one run's apiserver log, and a git-bisect-run verdict.

Besides logs it reads what a run leaves beside them (bisector.metrics): a directory (a CL2
report dir such as a CI build's artifacts/, or an evaluation's log dir with its metrics
snapshots and processes.json) or a pair of snapshots (--metrics-before/--metrics-after);
each metric printed says its source.

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
    130  interrupted: any termination signal (git bisect stops)
    131  no --threshold and the scores could not be written (stdout closed or full)

Output that cannot be written never changes a verdict: `git bisect run bisector score
... | head` closes the pipe every score writes to, and the verdict's code must still
reach git (bisector.ui.output).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bisector.durations import format_duration, parse_duration
from bisector.errors import BisectorError, CollectError
from bisector.exitcodes import ScoreExit
from bisector.logs import RequestMetric, Scores, metric_value, score_logs
from bisector.metric_registry import MetricRegistry
from bisector.metrics.direction import Worse, is_bad
from bisector.numbers import NO_VALUE
from bisector.runfiles import logs_in
from bisector.settings import DEFAULT_METRIC, read_config
from bisector.ui.output import stdin_closed, stdout_failure

if TYPE_CHECKING:  # a directory's or snapshots' files: imported only when some are given
    from bisector.metrics.readings import Evidence, Reading

APISERVER_LOG_GLOB = "kube-apiserver.log*"


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
    registry: MetricRegistry = field(default_factory=MetricRegistry)
    evidence: Evidence | None = None  # files beside (or instead of) a log

    @property
    def worse(self) -> Worse:
        return "higher" if self.metric is None else self.registry.worse(self.metric)


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
    metrics_before: Path | None = None,
    metrics_after: Path | None = None,
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
        snapshots=(metrics_before, metrics_after),
    )
    if "-" in request.sources and stdin_closed():
        return _no_verdict("stdin (-) is closed: there is no log to read", as_json, request)
    if request.evidence is not None:
        return _score_evidence(request, as_json, since=since, until=until)
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
    verdict, code = _verdict(reason, value, request.threshold, request.worse)
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
    return _exit_code(verdict, code)


def _exit_code(verdict: str | None, code: int) -> int:
    """The verdict's code; without a verdict (no --threshold) the scores were the product."""
    if verdict is None and _bisect_in_progress():
        # Exit 0 would read as *good* to `git bisect run`: stop the bisection instead.
        raise BisectorError(
            "no --threshold: a git bisect is in progress here and exit 0 would mark this "
            "commit good; pass --metric NAME --threshold VALUE"
        )
    if verdict is None and stdout_failure() is not None:
        return ScoreExit.OUTPUT_FAILED  # the scores were the product: say they are lost
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
    snapshots: tuple[Path | None, Path | None] = (None, None),
) -> ScoreRequest:
    registry = MetricRegistry.from_config(read_config(config))
    sources, evidence = _inputs(sources, *snapshots)
    if not sources and evidence is None:
        raise BisectorError(
            "no log given; pass at least one log file, URL or -, a directory, or "
            "--metrics-before and --metrics-after"
        )
    if len(sources) > 1 and "-" in sources:
        raise BisectorError("stdin (-) cannot be combined with other logs; pass files instead")
    if threshold is not None and metric is None:
        metric = DEFAULT_METRIC  # as `run` and `history` default to it
    if threshold is not None and not math.isfinite(threshold):
        # nan compares false with every value: the log would always score good.
        raise BisectorError(f"--threshold must be a finite number, got {threshold}")
    since_s = _duration(since, "--since")
    until_s = _duration(until, "--until")
    if since_s is not None and until_s is not None and until_s <= since_s:
        raise BisectorError(f"--until ({until}) must be later than --since ({since})")
    min_window_s = _duration(min_window, "--min-window")
    if metric is not None:
        registry.check(metric, "--metric")
        source = registry.source_of(metric)
        gone = evidence is None and len(sources) == 1 and not Path(sources[0]).exists()
        if source != "log" and gone:  # a run's directory that is gone: as a missing log
            from bisector.metrics.readings import Evidence

            sources, evidence = [], Evidence.in_dir(Path(sources[0]))
        if source != "log" and evidence is None:
            raise BisectorError(
                f"{metric} is read from {_SOURCE_INPUT[source]}, not from a log; pass that "
                "directory (or --metrics-before and --metrics-after)"
            )
    return ScoreRequest(
        tuple(sources),
        metric,
        threshold,
        since_s,
        until_s,
        min_window_s,
        registry.definitions,
        registry,
        evidence,
    )


_SOURCE_INPUT = {
    "cl2": "a ClusterLoader2 report directory",
    "prometheus": "two /metrics snapshots",
    "process": "a directory holding processes.json",
}


def _inputs(
    sources: Sequence[str], before: Path | None, after: Path | None
) -> tuple[list[str], Evidence | None]:
    """The logs to score, and the files beside them: a lone directory argument holds both
    (its kube-apiserver.log* set, a CL2 report, snapshots, processes.json); a pair of
    snapshots is given with --metrics-before/--metrics-after."""
    if (before is None) != (after is None):
        raise BisectorError("pass both --metrics-before and --metrics-after (two snapshots)")
    logs = list(sources)
    evidence = None
    if len(logs) == 1 and Path(logs[0]).is_dir():
        from bisector.metrics.readings import Evidence  # only with files besides a log

        directory = Path(logs[0])
        logs = [str(p) for p in logs_in(directory, APISERVER_LOG_GLOB)]
        evidence = Evidence.in_dir(directory)
    elif any(Path(s).is_dir() for s in logs):
        raise BisectorError("a directory is scored alone; pass it without other files")
    if before is not None and after is not None:
        from bisector.metrics.readings import Evidence

        base = evidence or Evidence()
        evidence = Evidence(base.cl2_dir, before, after, base.processes_dir)
    return logs, evidence


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
    reason: str | None, value: float | None, threshold: float | None, worse: Worse = "higher"
) -> tuple[str | None, int]:
    if reason is not None:  # no data is never good, with or without a threshold
        return "skip", ScoreExit.NO_VERDICT
    if threshold is None or value is None:
        return None, ScoreExit.GOOD
    if is_bad(value, threshold, worse):
        return "bad", ScoreExit.BAD
    return "good", ScoreExit.GOOD


def _no_verdict(message: str, as_json: bool, request: ScoreRequest) -> int:
    if as_json:
        out: dict[str, object] = {"metrics": None, "metric": request.metric, "value": None}
        out |= {"threshold": request.threshold, "verdict": "skip", "reason": message}
        typer.echo(json.dumps(out, indent=2))
    print(f"bisector: no verdict: {message}", file=sys.stderr)
    return ScoreExit.NO_VERDICT


def _bisect_in_progress() -> bool:
    """A `git bisect` is running in the repository of the current directory.

    git itself says where its bisect state is (a worktree's own git dir, GIT_DIR): one
    small process, where importing GitPython cost a fifth of a second of every score."""
    from bisector import proc

    try:
        found = proc.run(["git", "rev-parse", "--git-path", "BISECT_START"], check=False)
    except proc.CommandError:
        return False  # no git: nothing to protect
    if found.code != 0:
        return False  # not inside a repository: nothing to protect
    return Path(found.stdout.strip()).exists()


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

    from bisector.ui.terminal import make_console

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
    _print_verdict(metric, value, threshold=threshold, verdict=verdict, reason=reason)


def _print_verdict(
    metric: str | None,
    value: float | None,
    *,
    threshold: float | None,
    verdict: str | None,
    reason: str | None,
    worse: Worse = "higher",
) -> None:
    if verdict == "skip":  # whole lines, never wrapped: scripts grep them
        typer.echo(f"verdict: skip ({reason})")
    elif verdict:
        relations = {"higher": (">=", "<"), "lower": ("<=", ">")}[worse]
        relation = relations[0] if verdict == "bad" else relations[1]
        from bisector.numbers import format_threshold

        shown = _shown(value, metric or "")
        limit = "" if threshold is None else format_threshold(threshold, metric or "", worse)
        typer.echo(f"verdict: {verdict} ({metric} = {shown} {relation} {limit})")


# -- a directory or snapshots: metrics read from beside the log -----------------------------


@dataclass
class EvidenceScores:
    """What a directory or a pair of snapshots gave: the log's scores (if it held a log
    and they are needed), each source metric read, and why the others could not be."""

    scores: Scores | None = None
    log_problem: str | None = None
    readings: dict[str, Reading] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    value: float | None = None
    reason: str | None = None  # why the metric asked for has no verdict


def _score_evidence(
    request: ScoreRequest, as_json: bool, *, since: str | None, until: str | None
) -> int:
    """Scores of a directory or a pair of snapshots (and the logs in it, if any)."""
    found = _read_evidence(request, since, until)
    verdict, code = _verdict(found.reason, found.value, request.threshold, request.worse)
    if as_json:
        _print_evidence_json(request, found, verdict)
    else:
        _print_evidence_table(request, found, verdict)
    return _exit_code(verdict, code)


def _read_evidence(request: ScoreRequest, since: str | None, until: str | None) -> EvidenceScores:
    from bisector.metrics.readings import read_metric

    assert request.evidence is not None
    registry, metric = request.registry, request.metric
    found = EvidenceScores()
    wants_log = metric is not None and registry.source_of(metric) == "log"
    needs_log = wants_log or request.min_window_s is not None
    if request.sources and (metric is None or needs_log):
        try:
            found.scores = score_logs(
                list(request.sources),
                since=request.since_s,
                until=request.until_s,
                extra_metrics=request.extra or None,
            )
            found.log_problem = _no_data_reason(found.scores, request, since, until)
        except BisectorError as exc:
            found.log_problem = str(exc)
        except OSError as exc:
            found.log_problem = f"cannot read the log: {exc}"
    elif needs_log:
        found.log_problem = f"no {APISERVER_LOG_GLOB} was given"
    names = list(registry.sources) if metric is None else [] if wants_log else [metric]
    for name in names:
        source = registry.source_metric(name)
        assert source is not None
        try:
            found.readings[name] = read_metric(source, request.evidence)
        except CollectError as exc:
            found.unavailable[name] = exc.reason
    if metric is None:
        if not found.readings and found.scores is None:
            problems = [f"{k}: {v}" for k, v in found.unavailable.items()]
            found.reason = found.log_problem or "; ".join(problems) or "nothing to score"
        return found
    found.reason = found.log_problem if needs_log else None
    if wants_log and found.reason is None and found.scores is not None:
        found.value = metric_value(found.scores, metric)
        if found.value is None:
            found.reason = f"the log holds no data for {metric}"
    elif not wants_log:
        found.reason = found.unavailable.get(metric) or found.reason
        if found.reason is None:
            found.value = found.readings[metric].value
    return found


def _values_and_sources(found: EvidenceScores) -> tuple[dict[str, object], dict[str, object]]:
    values: dict[str, object] = {}
    sources: dict[str, object] = {}
    if found.scores is not None:
        values |= found.scores.metrics
        sources |= {name: {"source": "log"} for name in found.scores.metrics}
    values |= {name: r.value for name, r in found.readings.items()}
    sources |= {name: r.to_dict() for name, r in found.readings.items()}
    return values, sources


def _print_evidence_json(request: ScoreRequest, found: EvidenceScores, verdict: str | None) -> None:
    metric = request.metric
    values, sources = _values_and_sources(found)
    out: dict[str, object] = {"metrics": values, "sources": sources, "metric": metric}
    out |= {"value": found.value}
    out |= {"source": request.registry.source_of(metric) if metric else None}
    out |= {"worse": request.worse if metric else None, "threshold": request.threshold}
    out |= {"verdict": verdict, "reason": found.reason, "unavailable": found.unavailable}
    typer.echo(json.dumps(out, indent=2))


def _print_evidence_table(
    request: ScoreRequest, found: EvidenceScores, verdict: str | None
) -> None:
    from rich.table import Table

    from bisector.ui.terminal import make_console

    metric = request.metric
    values, _sources = _values_and_sources(found)
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    table.add_column("source")
    for name, shown in values.items():
        label = f"[bold]{name}[/]" if name == metric else name
        table.add_row(label, _shown(shown, name), request.registry.source_of(name))
    if values:
        make_console().print(table)
    for name, reading in found.readings.items():  # whole lines, never wrapped: scripts grep them
        typer.echo(f"{name}: {reading.source} {reading.where}")
    for name, why in found.unavailable.items():
        if metric is None or name == metric:
            typer.echo(f"{name}: {NO_VALUE} ({why})")
    _print_verdict(
        metric,
        found.value,
        threshold=request.threshold,
        verdict=verdict,
        reason=found.reason,
        worse=request.worse,
    )
