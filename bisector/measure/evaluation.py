"""One evaluation of one candidate: build, launch (with retries), warmup, collect, score, teardown.

Self-contained so `run`, `demo` and `nightly` share it. Infrastructure failures,
logs without data for the metric, and logs that do not cover the measurement
window (cut short by a restart, or stale) come back as a measurement with no value
and a `reason`: the caller records them as *skip*, never as a verdict.

Early verdicts (bisector.measure.early) end a watched warmup before its time; the
collected log is then held to what the early end claimed (`_score`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from bisector import proc
from bisector.backends.base import Backend, Candidate, PartialLogs
from bisector.backends.collected import read_load
from bisector.durations import format_duration
from bisector.errors import BisectorError, BuildError, CollectError, InfraError, LaunchError
from bisector.logs import Scores, metric_value, score_logs
from bisector.logs.sources import open_source, resolve
from bisector.measure.early import (
    EarlyEnd,
    EarlyStop,
    Scorer,
    early_good_problem,
    warm_up_watching,
)
from bisector.metrics.scoring import ReadsLogDir
from bisector.numbers import format_value
from bisector.search.progress import Phase, Reading

# A log covering less than this share of what it should is cut short (a restarted
# apiserver, a log rotated away): its counts are low for a reason that is not the code.
MIN_COVERAGE = 0.5
# A log belongs to this launch when it starts after the launch began, allowing this much
# difference between this machine's clock and the cluster's (NTP keeps them far closer;
# a log left by an earlier candidate started at least a build and a warmup earlier).
LAUNCH_CLOCK_ALLOWANCE_S = 10.0
# Log times may be whole seconds (a truncated stamp): a log starting within this long of
# an earlier evaluation's end may be the next launch's own.
LOG_TIME_RESOLUTION_S = 1.0
# A log whose times are within this long of the launch is on the wall clock: its start
# says whether it is this launch's. Logs further off keep simulated or replayed time (the
# sim's 2017 clock), which says nothing of which launch wrote them.
WALL_CLOCK_HORIZON_S = 24 * 3600.0
# A run whose warmup took at least this long (launch-ready to collect) said how long it
# ran: its log must cover MIN_COVERAGE of that. Shorter (a warmup of 0, a fake), and the
# endpoints' logs are the measure.
MIN_RAN_S = 1.0
# How a launch shows its log is its own, besides the time: a line naming its id
# (`$BISECTOR_LAUNCH_ID` for the local backend's commands), e.g. passed to the apiserver
# as a flag it logs at start, or written first by a log replayer.
LAUNCH_ID_MARK = b"bisector-launch-id="
_LAUNCH_ID = re.compile(rb"bisector-launch-id=([0-9a-f]{8,64})")
# A log's first bytes identify it: two launches' logs never begin alike (their first
# lines carry their own microsecond times), so a log that begins as an earlier
# evaluation's did is that evaluation's file.
HEAD_BYTES = 4096
# Garbled lines (bisector.logs.records: impossible times, binary bytes, over-long lines)
# may have been the metric's own lines. klog writes each line whole, under a lock: a
# healthy file holds at most one it did not finish (cut where it was copied mid-write).
# More is damage, and damage does not choose which lines it hits: a share of the log
# (1 % of a million lines is 10,000, more than a bad commit's 409s) would let it hide
# the metric. So the bound is a count: one per log file.
MAX_GARBLED_PER_FILE = 1
# A build that failed says the tree does not build, unless its output says the machine
# was the trouble (a full disk, memory, a timeout, a kill, the network).
_MACHINE_TROUBLE = re.compile(
    r"no space left on device|disk quota exceeded|cannot allocate memory|out of memory"
    r"|\btimed out\b|\btimeout\b|\bkilled\b|\bsignal \d+|connection (?:refused|reset)"
    r"|temporary failure in name resolution|network is unreachable|could not resolve host",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LogSeen:
    """An earlier evaluation's log, as far as telling a later log from it needs."""

    ended_at: float  # wall time (this machine) the evaluation ended
    start: float | None = None  # the log's window, on the log's clock
    end: float | None = None
    head: str = ""  # digest of its first HEAD_BYTES (Measurement.head)


def _no_earlier() -> Sequence[LogSeen]:
    return ()


@dataclass(frozen=True)
class WindowRule:
    """What an evaluation's log must cover, and show, to be a measurement.

    The contract with backends (warmups of a fixed time, or driven by a workload that
    ends when it ends):

    * Belonging: the log must be this launch's. A backend that writes each evaluation's
      log itself, fresh (`own_logs`: the sim), needs nothing more. Otherwise a log that
      names launch ids (LAUNCH_ID_MARK) must name this launch's and no other; one that
      names none must, on the wall clock, start after this launch began (less
      LAUNCH_CLOCK_ALLOWANCE_S): a file left by an earlier cluster on the path collect
      copies, or one appended to across launches, starts before. The allowance is for
      clock skew only: a log that begins as an earlier evaluation's log began (`head`),
      or begins before the end of the log of an evaluation that ended before this launch
      began (`earlier`), is that evaluation's, however recent. A log on another clock
      (simulated, replayed) that names no launch cannot be told from another's: a skip.
    * Coverage: the measured time from launch-ready to collect (`Measurement.ran_s`: the
      warmup as it really ran, fixed, ended by a workload or by an early verdict) is what
      a wall-clock log must cover, MIN_COVERAGE of it: a run's length may depend on the
      tree (a workload run to its end), so a fast good tree is never "cut short". When
      the run took no time of its own (a warmup of 0: the work happened in launch or
      collect) or the log is on another clock, the endpoints' logs are the measure: the
      shorter of the good and the bad endpoint's median spans (`expected_s`), so either
      side's own kind of log passes.
    """

    expected_s: float = 0.0  # the endpoints' logs (the shorter side), on the logs' clock
    real_time: bool = False  # timestamps are wall-clock, however far from now
    times_required: bool = False  # a log without timestamps is no measurement
    own_logs: bool = False  # the backend writes each evaluation's log itself (the sim)
    by_run: bool = True  # a wall-clock run's own length is the measure (not early goods)
    # The logs of the evaluations before this one (this run's and the cache's), read when
    # the log is judged: one that ended while this one built counts too.
    earlier: Callable[[], Sequence[LogSeen]] = _no_earlier

    @property
    def min_span_s(self) -> float:
        return MIN_COVERAGE * self.expected_s

    def coverage_waived(self) -> WindowRule:
        """The rule for a log short on purpose (a warmup ended early): no coverage asked,
        but a log that needed timestamps still does (without them it cannot be told from
        a stale or restarted one), and it must still be this launch's."""
        needs_times = self.times_required or self.min_span_s > 0
        return dataclasses.replace(self, expected_s=0.0, times_required=needs_times, by_run=False)


@dataclass
class Measurement:
    """What one evaluation of one commit measured (journaled as one JSON line)."""

    commit: str
    tree: str
    phase: str  # "endpoint", "bisect" or "confirm"
    value: float | None = None  # None: no verdict possible, see `reason`
    metrics: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    # The step whose InfraError made this run a skip (its `kind`: "build", "launch",
    # "collect", "checkout", "teardown", ...); None: measured, or a log that said nothing.
    skipped_at: str | None = None
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
    launched_at: float = 0.0  # wall time the (last) launch attempt began
    ran_s: float | None = None  # launch-ready to collect: how long the cluster ran
    # The share of the offered load that ran in the warmup, when the backend counts it
    # (procs: node watch events against the hollow nodes' status writes), and in words.
    load_fraction: float | None = None
    load: str = ""
    head: str = ""  # digest of the log's first HEAD_BYTES: the same file read again?
    # Seconds spent in each phase (build, launch, warmup, collect, teardown) as measured
    # here: the ETA's figures (bisector.cost.MeasuredPhases). Older journals: empty.
    phase_s: dict[str, float] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        known = set(cls.__dataclass_fields__)
        m = cls(**{k: v for k, v in data.items() if k in known})
        if m.stopped_early and m.early_verdict is None:
            m.early_verdict = "bad"  # journals before early good verdicts: only bad stopped
        if "skipped_at" not in data and m.value is None and m.reason:
            # Journals before `skipped_at` said the step only as the reason's first word.
            head, colon, _ = m.reason.partition(":")
            m.skipped_at = head if colon and head.isalpha() else None
        return m

    @property
    def span_s(self) -> float | None:
        return None if self.window is None else float(self.window.get("span_s", 0.0))

    @property
    def infra_skip(self) -> bool:
        """A skip the infrastructure caused (launch, collect, the log, a teardown, a full
        disk): it says nothing about the tree, so it is never final (a later session of
        the run, or a later run, measures the commit again). A build that failed on its
        own (the tree does not build, the patch does not apply) is the tree's."""
        if self.value is not None:
            return False
        if self.skipped_at != BuildError.kind:
            return True
        # The build's own output says when the machine, not the tree, failed it.
        return bool(_MACHINE_TROUBLE.search(self.reason or ""))


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
    launch_id: str = "",
) -> None:
    try:
        scores = scorer(logs)
    except InfraError as exc:  # a metric source's files (bisector.metrics) are missing or garbled
        m.reason, m.skipped_at = f"{exc.kind}: {exc.reason}", exc.kind
        return
    except BisectorError as exc:  # an unreadable or corrupt log is the infrastructure's fault
        m.reason, m.skipped_at = f"collect: log cannot be scored: {exc}", CollectError.kind
        return
    except Exception as exc:  # e.g. an I/O error mid-read: a skip, not the end of the run
        m.reason = f"collect: log cannot be scored: {type(exc).__name__}: {exc}"
        m.skipped_at = CollectError.kind
        return
    m.metrics = dict(scores.metrics)
    m.window = log_window(scores)
    m.head = log_head(logs)
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
            shown = format_value(value, metric)
            m.stopped_early = f"{ended.reason}; the collected log has {shown}: bad"
    elif ended is not None and ended.verdict == "good" and early is not None:
        why_not = early_good_problem(early, ended, value, m.span_s, rule.expected_s)
        if why_not is not None:
            m.reason = why_not
            return
        # The log must cover what was watched, not the whole warmup (checked above).
        rule = rule.coverage_waived()
        m.early_verdict = "good"
    why_not = (
        _garbled_problem(scores, len(logs))
        or _window_problem(m, rule, launch_id)
        or _stale_source_problem(m, rule, metric)
    )
    if why_not is None and ended is not None and ended.verdict == "bad" and m.early_verdict is None:
        # The look passed the threshold, this run's later log did not: the look read
        # another file. The log is short on purpose and says nothing either way.
        why_not = (
            f"stopped early as bad ({ended.reason}), but the collected log has "
            f"{format_value(value, metric)}: "
            "the look read another file than this run's log"
        )
    if why_not is not None:
        m.reason = why_not  # the value stays in `metrics`, never in `value`
        return
    m.value = value


def _garbled_problem(scores: Scores, files: int) -> str | None:
    lines = scores.metrics.get("lines")
    garbled = scores.unparsable_lines
    if garbled <= MAX_GARBLED_PER_FILE * max(1, files):
        return None
    shown = f" of {lines}" if isinstance(lines, int) else ""
    return (
        f"log cannot be trusted: {garbled}{shown} lines are garbled (impossible times, "
        "binary data, over-long lines; a healthy log has at most a cut last line); the "
        "metric's own lines may be among them"
    )


def _window_problem(m: Measurement, rule: WindowRule, launch_id: str = "") -> str | None:
    span = m.span_s
    if span is None:
        if rule.min_span_s > 0 or rule.times_required:
            return "no data: the log has no timestamps to tell what time it covers"
        return _launch_problem(m, rule, launch_id)
    start = m.window.get("start") if m.window else None
    wall = isinstance(start, (int, float)) and (
        rule.real_time or abs(start - m.launched_at) < WALL_CLOCK_HORIZON_S
    )
    ran = m.ran_s or 0.0
    if wall and rule.by_run and ran >= MIN_RAN_S:
        if span < MIN_COVERAGE * ran:
            return (
                f"log covers {format_duration(span)} of the {format_duration(ran)} the "
                "cluster ran: apiserver restarted or log cut short"
            )
    elif rule.min_span_s > 0 and span < rule.min_span_s:
        return (
            f"log covers {format_duration(span)} of {format_duration(rule.expected_s)}: "
            "apiserver restarted or log cut short"
        )
    return _launch_problem(m, rule, launch_id)


def _launch_problem(m: Measurement, rule: WindowRule, launch_id: str) -> str | None:
    """Why the collected log cannot be shown to be this launch's (see WindowRule)."""
    if rule.own_logs:
        return None
    start = m.window.get("start") if m.window else None
    named = _launch_ids(m.logs) if launch_id else set()
    if named:
        if named == {launch_id}:
            return None
        if launch_id in named:
            return "log holds lines of another launch too (a file appended to across clusters)"
        return (
            "stale log: it names another launch than this one (a file left by an earlier "
            "candidate's cluster?)"
        )
    if m.launched_at <= 0:
        return None  # scored outside an evaluation (no launch to compare with)
    if not isinstance(start, (int, float)):
        return _unprovable(m, launch_id)  # no times, no launch named
    if rule.real_time or abs(start - m.launched_at) < WALL_CLOCK_HORIZON_S:
        before = m.launched_at - start
        if before > LAUNCH_CLOCK_ALLOWANCE_S:
            return (
                f"stale log: it starts {format_duration(before)} before this launch began "
                f"(allowing {LAUNCH_CLOCK_ALLOWANCE_S:g}s of clock difference): a file left "
                "by an earlier candidate's cluster?"
            )
        return _earlier_log_problem(m, start, rule.earlier())
    return _unprovable(m, launch_id)


def _earlier_log_problem(m: Measurement, start: float, earlier: Sequence[LogSeen]) -> str | None:
    """Whether the log is an earlier evaluation's: it begins as that one's log began, or
    before that one's log ended although that evaluation ended before this launch began
    (the clock allowance is for skew, not for a file an apiserver that never started left)."""
    for seen in earlier:
        if seen.ended_at > m.launched_at:
            continue  # ran alongside this one (another slot): its log says nothing here
        # Two launches' logs begin alike only if their stamps cannot tell them apart: one
        # that ended a stamp's resolution before this launch began wrote its first lines
        # before this launch's could be written.
        if (
            m.head
            and seen.head == m.head
            and seen.ended_at <= m.launched_at - LOG_TIME_RESOLUTION_S
        ):
            return (
                "stale log: it begins with the same lines as an earlier evaluation's log "
                "(the file left by an earlier candidate's cluster: its apiserver never wrote?)"
            )
        if seen.end is None:
            continue
        # That log ended by the time its evaluation did (a log's times past its collect
        # are a replay's, not the wall clock's): begun before then, it is that one's.
        ended = min(seen.end, seen.ended_at)
        if start < ended - LOG_TIME_RESOLUTION_S:
            return (
                f"stale log: it begins {format_duration(ended - start)} before an earlier "
                "evaluation's log ended, and that evaluation ended before this launch began "
                "(the file left by an earlier candidate's cluster: its apiserver never wrote?)"
            )
    return None


def _stale_source_problem(m: Measurement, rule: WindowRule, metric: str) -> str | None:
    """A metric read from beside the log (bisector.metrics) must be this launch's too: a
    /metrics page whose process started before this launch began is an earlier cluster's
    apiserver (left up, still answering on the port the new one could not bind), and so
    is a processes.json measured from before it; the log may still be this launch's."""
    sources = m.metrics.get("sources")
    source = sources.get(metric) if isinstance(sources, dict) else None
    if not isinstance(source, dict):
        return None
    started = source.get("started")
    if m.launched_at <= 0 or not isinstance(started, (int, float)):
        return None
    if not (rule.real_time or abs(started - m.launched_at) < WALL_CLOCK_HORIZON_S):
        return None  # another clock (a replay, a fixture): it says nothing of the launch
    before = m.launched_at - started
    if before <= LAUNCH_CLOCK_ALLOWANCE_S:
        return None
    if source.get("source") == "cl2":  # a summary written before this launch: another's
        return (
            f"stale metrics: {metric} was read from a CL2 summary written "
            f"{format_duration(before)} before this launch began ({source.get('from')}): an "
            "earlier launch's report left in the report directory?"
        )
    return (
        f"stale metrics: {metric} was read from a process that started "
        f"{format_duration(before)} before this launch began ({source.get('from')}): an "
        "earlier candidate's apiserver still answering?"
    )


def _unprovable(m: Measurement, launch_id: str) -> str:
    shows = f" and names no launch (this one is {launch_id})" if launch_id else ""
    return (
        "cannot tell this log is this launch's: its clock is not this machine's (a "
        f"simulated or replayed log){shows}; have the launch write $BISECTOR_LAUNCH_ID "
        f"into it ({LAUNCH_ID_MARK.decode()}<id>)"
    )


def log_head(logs: Sequence[str]) -> str:
    """Digest of the first HEAD_BYTES of the first log (gzip or plain); "" if unreadable."""
    if not logs:
        return ""
    try:
        with open_source(resolve(logs[0])) as fh:
            head = fh.read(HEAD_BYTES)
    except (BisectorError, OSError):
        return ""
    return hashlib.sha256(head).hexdigest()[:32] if head else ""


def seen_log(m: Measurement) -> LogSeen:
    """What a later evaluation needs of `m`'s log to tell its own from it."""
    window = m.window or {}
    start, end = window.get("start"), window.get("end")
    return LogSeen(
        m.started_at + m.duration_s,
        float(start) if isinstance(start, (int, float)) else None,
        float(end) if isinstance(end, (int, float)) else None,
        m.head,
    )


def _launch_ids(logs: list[str], chunk: int = 1 << 20) -> set[str]:
    """The launch ids the log files name (LAUNCH_ID_MARK), gzip or plain."""
    found: set[str] = set()
    tail = len(LAUNCH_ID_MARK) + 64
    for path in logs:
        try:
            with open_source(resolve(path)) as fh:
                carry = b""
                while True:
                    block = fh.read(chunk)
                    data = carry + block
                    for match in _LAUNCH_ID.finditer(data):
                        # An id running to the chunk's end may go on in the next one:
                        # read whole from the carried tail then, never half.
                        if not block or match.end() < len(data):
                            found.add(match.group(1).decode())
                    if not block:
                        break
                    carry = data[-tail:]
        except (BisectorError, OSError):
            continue  # the scorer already said what is wrong with an unreadable file
    return found


class _PhaseClock:
    """Says each phase as it begins and adds up the time spent in it (Measurement.phase_s)."""

    def __init__(self, m: Measurement, on_phase: Callable[[Phase], None] | None) -> None:
        self.m = m
        self.on_phase = on_phase
        self.current: Phase | None = None
        self.since = 0.0

    def begin(self, phase: Phase | None) -> None:
        now = time.monotonic()
        if self.current is not None and self.current != "ready":  # ready is a moment
            spent = self.m.phase_s.get(self.current, 0.0) + now - self.since
            self.m.phase_s[self.current] = round(spent, 3)
        self.current, self.since = phase, now
        if phase is not None and self.on_phase is not None:
            self.on_phase(phase)


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
    on_nothing_up: Callable[[], None] | None = None,
    on_phase: Callable[[Phase], None] | None = None,
    on_reading: Callable[[Reading], None] | None = None,
) -> Measurement:
    """Evaluate `candidate` once; teardown runs on every path once launch was attempted.

    `teardown` replaces `backend.teardown` (the caller's way to make it finish even
    when a signal arrives meanwhile). `early` with `partial` (the backend's partial-log
    capability) ends the warmup early on a certain verdict; `on_build` runs before
    the build (it waits for a prefetch of this commit and says whether one is used),
    `on_launch` once the build is done (prefetches start there), `on_step` between
    warmup steps (a cancelled run raises there), `on_nothing_up` once nothing of this
    evaluation can be left up (its last teardown succeeded, or nothing was launched),
    on every path: an interrupt propagating from here has torn down too. `on_phase` is
    told each phase as it begins (build, launch, ready, warmup, collect, teardown; their
    times go to `Measurement.phase_s`), `on_reading` each look at a watched warmup.
    """
    m = Measurement(
        candidate.commit, tree, phase, started_at=time.time(), slot=candidate.slot, why=why
    )
    m.eval_dir = str(candidate.eval_dir)
    start = time.monotonic()
    launched = collecting = False
    tear_down = teardown or backend.teardown
    clock = _PhaseClock(m, on_phase)

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
        clock.begin("build")  # waiting for this commit's build ahead included
        if on_build is not None:
            on_build(m)
        with logged("build"):
            backend.build(candidate)
        launched = True
        if on_launch is not None:
            on_launch()  # this build is done: the next ones can run while the cluster starts
        clock.begin("launch")  # every attempt, and the teardowns between them
        for attempt in Retrying(
            stop=stop_after_attempt(max(1, launch_attempts)),
            wait=wait_fixed(retry_wait_s),
            retry=retry_if_exception_type(LaunchError),
            before_sleep=teardown_between,
            reraise=True,
        ):
            with attempt, logged("launch"):
                m.launch_attempts += 1
                m.launched_at = time.time()  # the log must be this attempt's
                backend.launch(candidate)
        clock.begin("ready")
        clock.begin("warmup")
        ready = time.monotonic()
        ended: EarlyEnd | None = None
        with logged("warmup"):
            if early is not None and partial is not None:
                ended = warm_up_watching(
                    partial, candidate, early, on_step, m.trajectory, on_reading=on_reading
                )
                m.stopped_early = None if ended is None else ended.reason
            else:
                backend.warmup(candidate)
        m.ran_s = round(time.monotonic() - ready, 3)
        collecting = True
        clock.begin("collect")  # the scoring too
        with logged("collect"):
            logs = [str(p) for p in backend.collect(candidate)]
        m.logs = logs
        if isinstance(scorer, ReadsLogDir):  # its metric is read from this evaluation's files
            scorer = scorer.in_log_dir(candidate.log_dir)
        rule = window or WindowRule()
        if backend.traits.own_logs:  # the sim: each log is this launch's
            rule = dataclasses.replace(rule, own_logs=True)
        _score(
            scorer,
            logs,
            metric,
            m,
            rule,
            early=early,
            ended=ended,
            launch_id=candidate.launch_id,
        )
    except InfraError as exc:
        m.reason, m.skipped_at = f"{exc.kind}: {exc.reason}", exc.kind
    finally:
        delivered = read_load(candidate.log_dir) if collecting else None
        if delivered is not None:  # also on a skip: "the load did not run" shows its share
            m.load_fraction, m.load = delivered.fraction, delivered.describe()
        if m.value is None:
            m.stopped_early = None  # a skip: the early look decided nothing
            m.early_verdict = None
        torn_down = not launched
        clock.begin("teardown" if launched else None)
        if launched:
            try:
                with logged("teardown"):
                    tear_down(candidate)
                torn_down = True
            except InfraError as exc:
                m.teardown_error = exc.reason
                _teardown_failed(m, exc.reason)
        clock.begin(None)
        m.duration_s = round(time.monotonic() - start, 3)
        if torn_down and on_nothing_up is not None:
            on_nothing_up()
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
    if not m.reason:
        m.reason, m.skipped_at = f"teardown: {error}", "teardown"
