"""Whether a collected log is this launch's, whole and readable: the rules that make its
value a measurement of the candidate (WindowRule says them).

A log left by an earlier cluster, one appended to across launches, one cut short by a
restart, one damaged past a cut last line, or a metric read from an earlier process is
no measurement of this launch: each comes back as a problem in words, which the
evaluation (bisector.measure.evaluation) records as a skip, never as a verdict.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bisector.durations import format_duration
from bisector.errors import BisectorError
from bisector.logs import Scores
from bisector.logs.sources import open_source, resolve
from bisector.measure.measurement import Measurement

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


def log_problem(
    scores: Scores, m: Measurement, rule: WindowRule, metric: str, launch_id: str = ""
) -> str | None:
    """Why the scored log's value is no measurement of this launch (garbled, too short,
    another launch's, its metric read from an earlier process); None if it is one."""
    return (
        _garbled_problem(scores, len(m.logs))
        or window_problem(m, rule, launch_id)
        or _stale_source_problem(m, rule, metric)
    )


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


def window_problem(m: Measurement, rule: WindowRule, launch_id: str = "") -> str | None:
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
    named = launch_ids(m.logs) if launch_id else set()
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


def launch_ids(logs: list[str], chunk: int = 1 << 20) -> set[str]:
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
