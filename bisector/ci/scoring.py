"""Scoring CI runs straight from GCS: streamed (no temp copies), several runs at once, cached.

Each run's log set is handed to `bisector.logs.score_logs` as `gs://` addresses;
the scorer streams and inflates the objects itself. Runs are scored on a few
threads, which overlap network waits and inflating (isal, outside the GIL) with
scanning; the scan itself holds the GIL, so with a local emulator (no network
latency) the gain is small — see scripts/bench_history.py. The threads are
daemons: Ctrl-C does not wait for a 2 GiB log to finish.

A run that cannot be scored is never good: it carries a `problem` ("no logs",
"unreadable: ...") and no value; a log without the lines a metric needs has
scores but `value(metric)` is None.

A `cl2` metric (ScoreSettings.source) is read from the run's CL2 summary in `artifacts/`
instead of its logs: no summary is "no summary", a garbled one "unreadable: ...".
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from google.api_core import exceptions as gexc

from bisector.ci.cache import ScoreCache, settings_fingerprint
from bisector.ci.gcs import retrying
from bisector.ci.metadata import RunInfo
from bisector.ci.runs import (
    JobRef,
    LogSet,
    find_log_set,
    find_summary,
    read_object,
    read_run_info,
)
from bisector.errors import BisectorError, CollectError
from bisector.logs import RequestMetric, Scores, metric_value, score_logs
from bisector.metric_registry import MetricRegistry
from bisector.metrics import Cl2Metric, SourceMetric
from bisector.metrics.cl2 import MAX_SUMMARY_BYTES, value_from
from bisector.metrics.readings import Reading
from bisector.metrics.scoring import with_reading

DEFAULT_WORKERS = 4
# Read size handed to the scorer (its default is 16 MiB). Several runs are scored at
# once, each holding a chunk and its matches: at 1 MiB four runs at once peaked at
# ~190 MiB RSS instead of ~460 MiB, at the same speed (scripts/bench_history.py).
STREAM_CHUNK_BYTES = 1 << 20
NO_LOGS = "no logs"
NO_DATA = "no data"
NO_SUMMARY = "no summary"
UNREADABLE = "unreadable"  # a problem's prefix: the run could not be read (not an answer)
# What a CI build keeps that a metric can be read from: its apiserver logs and, for a
# ClusterLoader2 job, the CL2 summaries in artifacts/. No /metrics snapshots of the
# warmup (`prometheus`), no process usage (`process`).
CI_SOURCES = ("log", "cl2")

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class RunScore:
    """One CI run: its metadata, the log set read, and its scores (None: not scored)."""

    info: RunInfo
    logs: LogSet | None
    scores: Scores | None
    problem: str | None = None  # why there are no scores
    cached: bool = False

    @property
    def run(self) -> int:
        return self.info.run

    def value(self, metric: str) -> float | None:
        """The metric's value; None when the run has no logs or they lack its lines."""
        return None if self.scores is None else metric_value(self.scores, metric)

    def status(self, metric: str) -> str:
        """`ok`, `no logs`, `no data` (e.g. a --v=2 log for request metrics) or the problem."""
        if self.scores is None:
            return self.problem or NO_LOGS
        return "ok" if self.value(metric) is not None else NO_DATA


@dataclass(frozen=True)
class ScoreSettings:
    since: float | None = None  # seconds after the first log line
    until: float | None = None
    extra_metrics: Mapping[str, RequestMetric] | None = None
    master: str | None = None  # artifacts/ directory to read; None: chosen (see runs.py)
    source: SourceMetric | None = None  # a metric read from beside the logs (cl2)

    @property
    def fingerprint(self) -> str:
        base = settings_fingerprint(self.since, self.until, self.extra_metrics)
        return base if self.source is None else f"{base} {self.source!r}"


def ci_source_problem(metrics: MetricRegistry, metric: str) -> str | None:
    """Why CI builds cannot give `metric` (one line), or None when they can.

    `history` and `nightly` both ask here, so they accept and refuse the same metrics."""
    source = metrics.source_of(metric)
    if source in CI_SOURCES:
        return None
    return (
        f"{metric} is a {source} metric: CI builds keep apiserver logs and CL2 summaries "
        "only; choose a log or cl2 metric"
    )


def score_run(
    client: Any, job: JobRef, run: int, cache: ScoreCache, settings: ScoreSettings
) -> RunScore:
    """Metadata, log set and scores of one run; failures end up in `problem`, never raised."""
    info = RunInfo(run, None, None, None, None)
    try:
        info = read_run_info(client, job, run)
        logs = None if settings.source else find_log_set(client, job, run, settings.master)
    except (BisectorError, gexc.GoogleAPIError) as exc:
        return RunScore(info, None, None, problem=f"{UNREADABLE}: {exc}")
    except Exception as exc:  # e.g. a transport error the storage library does not wrap
        # One run's read failure stays that run's: the others are scored, and the nightly
        # reads this one again on a later night.
        return RunScore(info, None, None, problem=f"{UNREADABLE}: {type(exc).__name__}: {exc}")
    if settings.source is not None:
        return _score_source(client, job, info, cache, settings)
    if logs is None:
        return RunScore(info, None, None, problem=NO_LOGS)
    key = cache.key(job.bucket, logs, settings.fingerprint)
    if (hit := cache.get(key)) is not None:
        return RunScore(info, logs, hit, cached=True)
    urls = [o.url(job.bucket) for o in logs.objects]
    extra = dict(settings.extra_metrics) if settings.extra_metrics else None
    try:
        scores = retrying(
            lambda: score_logs(
                urls,
                since=settings.since,
                until=settings.until,
                extra_metrics=extra,
                chunk_size=STREAM_CHUNK_BYTES,
            )
        )
    except (BisectorError, gexc.GoogleAPIError, OSError) as exc:
        return RunScore(info, logs, None, problem=f"{UNREADABLE}: {exc}")
    except Exception as exc:  # one bad object must not sink the other runs
        # Anything the reader did not foresee stays this run's problem, not the whole table's.
        return RunScore(info, logs, None, problem=f"{UNREADABLE}: {type(exc).__name__}: {exc}")
    cache.put(key, scores)
    return RunScore(info, logs, scores)


def _score_source(
    client: Any,
    job: JobRef,
    info: RunInfo,
    cache: ScoreCache,
    settings: ScoreSettings,
) -> RunScore:
    """The run's value of a cl2 metric, from its summary in artifacts/ (cached by the
    summary object's generation)."""
    metric = settings.source
    assert metric is not None
    if not isinstance(metric, Cl2Metric):
        return RunScore(info, None, None, problem=f"unreadable: {metric.source} is not in CI")
    try:
        summary = find_summary(client, job, info.run, metric.summary)
        if summary is None:
            return RunScore(info, None, None, problem=NO_SUMMARY)
        found = LogSet("artifacts", (summary,))
        key = cache.key(job.bucket, found, settings.fingerprint)
        if (hit := cache.get(key)) is not None:
            return RunScore(info, found, hit, cached=True)
        data = read_object(client, job.bucket, summary, MAX_SUMMARY_BYTES)
        name = summary.name.rsplit("/", 1)[-1]
        got = value_from(data, name, dict(metric.labels), metric.key)
    except CollectError as exc:
        return RunScore(info, None, None, problem=f"unreadable: {exc.reason}")
    except (BisectorError, gexc.GoogleAPIError, OSError) as exc:
        return RunScore(info, None, None, problem=f"unreadable: {exc}")
    reading = Reading(metric.name, got.value, "cl2", f"{summary.url(job.bucket)} {metric.key}")
    scores = with_reading(Scores(), reading)
    cache.put(key, scores)
    return RunScore(info, found, scores)


def score_runs(
    client: Any,
    job: JobRef,
    runs: Sequence[int],
    cache: ScoreCache,
    settings: ScoreSettings | None = None,
    *,
    workers: int = DEFAULT_WORKERS,
    on_done: Callable[[RunScore], None] | None = None,
) -> list[RunScore]:
    """Every run scored, `workers` at a time, in the order of `runs`."""
    chosen = settings or ScoreSettings()

    def one(run: int) -> RunScore:
        result = score_run(client, job, run, cache, chosen)
        if on_done is not None:
            on_done(result)
        return result

    return map_on_daemon_threads(one, runs, workers)


def map_on_daemon_threads(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """`[fn(x) for x in items]` on up to `workers` daemon threads; re-raises the first error."""
    results: dict[int, R] = {}
    errors: list[BaseException] = []
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(items)):
        todo.put(index)
    done = threading.Semaphore(0)

    def work() -> None:
        while True:
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[index] = fn(items[index])
            except BaseException as exc:
                errors.append(exc)
            finally:
                done.release()

    for _ in range(max(1, min(workers, len(items)))):
        threading.Thread(target=work, daemon=True, name="bisector-history").start()
    for _ in items:
        done.acquire()
    if errors:
        raise errors[0]
    return [results[i] for i in range(len(items))]
