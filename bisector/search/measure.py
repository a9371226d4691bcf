"""One evaluation of one candidate: build, launch (with retries), warmup, collect, score, teardown.

Self-contained so `run`, `demo` and `nightly` share it. Infrastructure failures,
logs without data for the metric, and logs that do not cover the measurement
window (cut short by a restart, or stale) come back as a measurement with no value
and a `reason`: the caller records them as *skip*, never as a verdict.

Early verdicts (bisector.search.early) end a watched warmup before its time; the
collected log is then held to what the early end claimed (`_score`).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from bisector import proc
from bisector.backends.base import Backend, Candidate, PartialLogs
from bisector.durations import format_duration
from bisector.errors import BisectorError, InfraError, LaunchError
from bisector.logs import Scores, metric_value, score_logs
from bisector.metrics import ReadsLogDir
from bisector.search.early import (
    EarlyEnd,
    EarlyStop,
    Scorer,
    early_good_problem,
    warm_up_watching,
)

# A log covering less than this share of what it should is cut short (a restarted
# apiserver, a log rotated away): its counts are low for a reason that is not the code.
MIN_COVERAGE = 0.5
# Clock skew allowed between this machine and the cluster when spotting stale logs.
STALE_SLACK_S = 120.0
# A log ending within this long before the evaluation started is on the wall clock, so
# ending before the start makes it stale (an earlier candidate's file). Logs further off
# keep simulated or replayed time (the sim's 2017 clock), which says nothing of staleness.
WALL_CLOCK_HORIZON_S = 24 * 3600.0
# Garbled lines may have been the metric's own lines: past this share of the log, its
# counts cannot be trusted either way.
MAX_GARBLED_SHARE = 0.01


@dataclass(frozen=True)
class WindowRule:
    """What an evaluation's log must cover to be a measurement."""

    expected_s: float = 0.0  # the time the log should span (warmup, or the endpoints' logs)
    real_time: bool = False  # timestamps are wall-clock: a log ending before launch is stale
    times_required: bool = False  # a log without timestamps is no measurement

    @property
    def min_span_s(self) -> float:
        return MIN_COVERAGE * self.expected_s

    def coverage_waived(self) -> WindowRule:
        """The rule for a log short on purpose (a warmup ended early): no coverage asked,
        but a log that needed timestamps still does (without them it cannot be told from
        a stale or restarted one)."""
        needs_times = self.times_required or self.min_span_s > 0
        return WindowRule(0.0, self.real_time, times_required=needs_times)


@dataclass
class Measurement:
    """What one evaluation of one commit measured (journaled as one JSON line)."""

    commit: str
    tree: str
    phase: str  # "endpoint", "bisect" or "confirm"
    value: float | None = None  # None: no verdict possible, see `reason`
    metrics: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    duration_s: float = 0.0
    logs: list[str] = field(default_factory=list)
    launch_attempts: int = 0
    eval_dir: str = ""
    teardown_error: str | None = None
    started_at: float = 0.0
    slot: int = 0
    why: str = ""  # why the search measured this commit
    window: dict[str, Any] | None = None  # {start, end, span_s} of the log (epoch seconds)
    stopped_early: str | None = None  # why the warmup ended before its time, if it did
    prefetched_build: bool = False  # the build was made ahead, while another cluster ran
    early_verdict: str | None = None  # "bad"/"good" when the warmup ended early (stopped_early)
    # [warmup seconds, value] at each look at the growing log (watched warmups only).
    trajectory: list[list[float]] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        known = set(cls.__dataclass_fields__)
        m = cls(**{k: v for k, v in data.items() if k in known})
        if m.stopped_early and m.early_verdict is None:
            m.early_verdict = "bad"  # journals before early good verdicts: only bad stopped
        return m

    @property
    def span_s(self) -> float | None:
        return None if self.window is None else float(self.window.get("span_s", 0.0))


def log_window(scores: Scores) -> dict[str, Any] | None:
    """{start, end, span_s} of the time the scored log covers; None if it has no times."""
    window = scores.window or scores.seen
    if window is None:
        return None
    return {"start": window.first, "end": window.last, "span_s": window.seconds}


def _score(
    scorer: Scorer,
    logs: list[str],
    metric: str,
    m: Measurement,
    rule: WindowRule,
    *,
    early: EarlyStop | None = None,
    ended: EarlyEnd | None = None,
) -> None:
    try:
        scores = scorer(logs)
    except InfraError as exc:  # a metric source's files (bisector.metrics) are missing or garbled
        m.reason = f"{exc.kind}: {exc.reason}"
        return
    except BisectorError as exc:  # an unreadable or corrupt log is the infrastructure's fault
        m.reason = f"collect: log cannot be scored: {exc}"
        return
    except Exception as exc:  # e.g. an I/O error mid-read: a skip, not the end of the run
        m.reason = f"collect: log cannot be scored: {type(exc).__name__}: {exc}"
        return
    m.metrics = dict(scores.metrics)
    m.window = log_window(scores)
    value = metric_value(scores, metric)
    if value is None:
        m.reason = f"no data: the log has no lines metric {metric!r} needs"
        return
    threshold = early.threshold if early is not None else None
    if ended is not None and threshold is not None and value >= threshold:
        # Past the threshold (a monotone metric stays there): bad for certain, and the
        # log covers less than the warmup on purpose.
        rule = rule.coverage_waived()
        m.early_verdict = "bad"
        if ended.verdict == "good":
            m.stopped_early = f"{ended.reason}; the collected log has {value:g}: bad"
    elif ended is not None and ended.verdict == "good" and early is not None:
        why_not = early_good_problem(early, ended, value, m.span_s, rule.expected_s)
        if why_not is not None:
            m.reason = why_not
            return
        # The log must cover what was watched, not the whole warmup (checked above).
        rule = rule.coverage_waived()
        m.early_verdict = "good"
    why_not = _garbled_problem(scores) or _window_problem(m, rule)
    if why_not is None and ended is not None and ended.verdict == "bad" and m.early_verdict is None:
        # The look passed the threshold, this run's later log did not: the look read
        # another file. The log is short on purpose and says nothing either way.
        why_not = (
            f"stopped early as bad ({ended.reason}), but the collected log has {value:g}: "
            "the look read another file than this run's log"
        )
    if why_not is not None:
        m.reason = why_not  # the value stays in `metrics`, never in `value`
        return
    m.value = value


def _garbled_problem(scores: Scores) -> str | None:
    lines = scores.metrics.get("lines")
    garbled = scores.unparsable_lines
    if not garbled or not isinstance(lines, int) or garbled <= MAX_GARBLED_SHARE * lines:
        return None
    return (
        f"log cannot be trusted: {garbled} of {lines} lines are garbled (impossible times, "
        "binary data, cut lines); the metric's own lines may be among them"
    )


def _window_problem(m: Measurement, rule: WindowRule) -> str | None:
    span = m.span_s
    if span is None:
        if rule.min_span_s > 0 or rule.times_required:
            return "no data: the log has no timestamps to tell what time it covers"
        return None
    if rule.min_span_s > 0 and span < rule.min_span_s:
        return (
            f"log covers {format_duration(span)} of {format_duration(rule.expected_s)}: "
            "apiserver restarted or log cut short"
        )
    end = m.window.get("end") if m.window else None
    behind = m.started_at - end if isinstance(end, (int, float)) else 0.0
    on_wall_clock = rule.real_time or behind < WALL_CLOCK_HORIZON_S
    if behind > STALE_SLACK_S and on_wall_clock:
        return (
            "stale log: it ends before this evaluation started (a file left by an earlier "
            "candidate?)"
        )
    return None


def evaluate_candidate(
    backend: Backend,
    candidate: Candidate,
    *,
    metric: str,
    tree: str = "",
    phase: str = "bisect",
    launch_attempts: int = 3,
    retry_wait_s: float = 0.0,
    scorer: Scorer = score_logs,
    window: WindowRule | None = None,
    why: str = "",
    teardown: Callable[[Candidate], None] | None = None,
    early: EarlyStop | None = None,
    partial: PartialLogs | None = None,
    on_build: Callable[[Measurement], None] | None = None,
    on_launch: Callable[[], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> Measurement:
    """Evaluate `candidate` once; teardown runs on every path once launch was attempted.

    `teardown` replaces `backend.teardown` (the caller's way to make it finish even
    when a signal arrives meanwhile). `early` with `partial` (the backend's partial-log
    capability) ends the warmup early on a certain verdict; `on_build` runs before
    the build (it waits for a prefetch of this commit and says whether one is used),
    `on_launch` once the build is done (prefetches start there), `on_step` between
    warmup steps (a cancelled run raises there).
    """
    m = Measurement(
        candidate.commit, tree, phase, started_at=time.time(), slot=candidate.slot, why=why
    )
    m.eval_dir = str(candidate.eval_dir)
    start = time.monotonic()
    launched = False
    tear_down = teardown or backend.teardown

    def logged(step: str) -> contextlib.AbstractContextManager[None]:
        # Whatever the backend runs in this step keeps its output: evals/NNN/<step>.log.
        context: contextlib.AbstractContextManager[None] = proc.logging_to(
            candidate.eval_dir / f"{step}.log"
        )
        return context

    def teardown_between(_state: object) -> None:
        with logged("teardown"):
            tear_down(candidate)

    try:
        candidate.eval_dir.mkdir(parents=True, exist_ok=True)
        if on_build is not None:
            on_build(m)
        with logged("build"):
            backend.build(candidate)
        launched = True
        if on_launch is not None:
            on_launch()  # this build is done: the next ones can run while the cluster starts
        for attempt in Retrying(
            stop=stop_after_attempt(max(1, launch_attempts)),
            wait=wait_fixed(retry_wait_s),
            retry=retry_if_exception_type(LaunchError),
            before_sleep=teardown_between,
            reraise=True,
        ):
            with attempt, logged("launch"):
                m.launch_attempts += 1
                backend.launch(candidate)
        ended: EarlyEnd | None = None
        with logged("warmup"):
            if early is not None and partial is not None:
                ended = warm_up_watching(partial, candidate, early, on_step, m.trajectory)
                m.stopped_early = None if ended is None else ended.reason
            else:
                backend.warmup(candidate)
        with logged("collect"):
            logs = [str(p) for p in backend.collect(candidate)]
        m.logs = logs
        if isinstance(scorer, ReadsLogDir):  # its metric is read from this evaluation's files
            scorer = scorer.in_log_dir(candidate.log_dir)
        _score(scorer, logs, metric, m, window or WindowRule(), early=early, ended=ended)
    except InfraError as exc:
        m.reason = f"{exc.kind}: {exc.reason}"
    finally:
        if m.value is None:
            m.stopped_early = None  # a skip: the early look decided nothing
            m.early_verdict = None
        if launched:
            try:
                with logged("teardown"):
                    tear_down(candidate)
            except InfraError as exc:
                m.teardown_error = exc.reason
                _teardown_failed(m, exc.reason)
        m.duration_s = round(time.monotonic() - start, 3)
    return m


def _teardown_failed(m: Measurement, error: str) -> None:
    """A teardown that failed makes the evaluation a skip: the cluster it measured may
    still be up or half gone, so its log says nothing certain about the code; the value
    stays in `metrics` for a person to read, never in `value`."""
    if m.value is not None:
        m.metrics.setdefault("value_before_teardown_failed", m.value)
    m.value = None
    m.stopped_early = None
    m.early_verdict = None
    m.reason = m.reason or f"teardown: {error}"
