"""Early verdicts: a warmup watched through the backend's growing log, ended once its
verdict is known.

`EarlyStop`: with a backend that can show the log while it grows
(`PartialLogs`), the warmup runs in steps; after each, the log so far is scored
and once a metric that only grows during a run is at or above the threshold, the
warmup ends there (`stopped_early` says when and why). The peeked value is only a
reason to stop: the verdict still comes from the collected log, scored as always.
Such a log legitimately covers less than the warmup, so the coverage rule is waived
for it, but only when the collected log's own value is at or above the threshold;
anything else (no log, garbled, stale) is what it would have been, and a value below
(the look read another file: the metric only grows) is a skip.

Early good verdicts (`[run] early_good`, plain search runs only) rest on the bad
endpoint: its warmup is watched too (never stopped), and the look at which it first
passed the threshold is its onset. A search run whose log stays below the threshold
for EARLY_GOOD_FACTOR times that onset, and whose rate so far projects to at most
1 / EARLY_GOOD_MARGIN of the threshold at the warmup's end, ends there as good. The
collected log must say the same and cover the whole time watched (an apiserver that
restarted meanwhile would show low counts for a reason that is not the code); else the
run is a skip. A regression that shows later than the bad endpoint's is what this can
miss: the pipeline's safety net (the parent's full-length confirmation, then a search
without early good verdicts) is in bisector.bisection.pipeline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bisector.backends.base import Candidate, PartialLogs
from bisector.durations import format_duration
from bisector.logs import METRIC_NAMES, metric_value
from bisector.logs.names import MONOTONE_METRICS
from bisector.logs.scores import GrowingScorer, GrowingScorerFactory, Scorer
from bisector.numbers import format_threshold, format_value
from bisector.search.progress import Reading


def is_monotone(metric: str) -> bool:
    """Whether `metric` can only grow during a run (user `[metrics.NAME]` are request counts)."""
    return metric in MONOTONE_METRICS or metric not in METRIC_NAMES


def rescoring(scorer: Scorer) -> GrowingScorerFactory:
    """The first growing-log scorer: score the whole log again at each check.

    O(log so far) per check, not O(new bytes); the incremental scorer of bisector.logs
    takes its place through the same factory type.
    """
    return lambda: scorer


# A search run is good early after this many times the bad endpoint's onset ...
EARLY_GOOD_FACTOR = 2.0
# ... when its rate so far projects to at most 1 / EARLY_GOOD_MARGIN of the threshold.
EARLY_GOOD_MARGIN = 2.0


@dataclass(frozen=True)
class EarlyStop:
    """How to watch a warmup: look at the log every `every_s`, record what it shows,
    and end the warmup once its verdict is known (bad: `metric` at or above
    `threshold`; good: below it and on course to stay below, after `good_after_s`).

    `threshold` None only watches (the endpoints: their onset arms early good verdicts).
    """

    metric: str
    threshold: float | None
    every_s: float  # cluster time between two looks at the log
    warmup_s: float  # the whole warmup, for the message and the projection
    scorers: GrowingScorerFactory
    good_after_s: float | None = None  # None: no early good verdict
    onset_s: float | None = None  # the bad endpoint's onset, for the message

    def projected(self, value: float, elapsed_s: float) -> float:
        """`value` after `elapsed_s` of warmup, carried to the warmup's end at its rate."""
        return value * self.warmup_s / max(elapsed_s, 1e-9)

    def good_so_far(self, value: float, elapsed_s: float) -> bool:
        """Whether a run showing `value` after `elapsed_s` is good for certain enough."""
        if self.threshold is None or self.good_after_s is None or self.warmup_s <= 0:
            return False
        if elapsed_s < self.good_after_s or elapsed_s >= self.warmup_s:
            return False
        limit = self.threshold / EARLY_GOOD_MARGIN
        return value < self.threshold and self.projected(value, elapsed_s) <= limit


@dataclass(frozen=True)
class EarlyEnd:
    """Why a watched warmup ended before its time."""

    verdict: str  # "bad" or "good"
    elapsed_s: float  # warmup time when it ended
    reason: str


def onset(trajectory: list[list[float]], threshold: float) -> float | None:
    """The warmup time of the first look at or above `threshold`; None if none was."""
    for elapsed, value in trajectory:
        if value >= threshold:
            return float(elapsed)
    return None


def looks_agree(trajectory: list[list[float]], final: float) -> bool:
    """Whether the looks can all be of the run whose collected log reads `final`.

    The metric only grows during a run: no look reads more than a later look or the
    collected log. One that does read another file (a peek of a stale or mixed-up log),
    and its onset would arm early good verdicts too soon.
    """
    later = final
    for _elapsed, value in reversed(trajectory):
        if value > later:
            return False
        later = value
    return True


def early_good_problem(
    early: EarlyStop, ended: EarlyEnd, value: float, span_s: float | None, whole_s: float = 0.0
) -> str | None:
    """Why the collected log of a run stopped early as good cannot say good, if it cannot.

    `whole_s`: what a whole run's log covers on the log's own clock (the endpoints'
    logs); the time watched is read on that clock when it runs faster than the warmup's.
    """
    if not early.good_so_far(value, ended.elapsed_s):
        return (
            f"stopped early as good after {format_duration(ended.elapsed_s)}, but the "
            f"collected log ({format_value(value, early.metric)}) is not on course to stay below "
            "the threshold"
        )
    # One look's worth of slack: the last look may have read a log a little behind.
    scale = max(1.0, whole_s / max(early.warmup_s, 1e-9))
    needed = (ended.elapsed_s - early.every_s) * scale
    if span_s is None or span_s < needed:
        covered = "no time" if span_s is None else format_duration(span_s)
        watched = format_duration(ended.elapsed_s * scale)
        return (
            f"log covers {covered} of the {watched} watched before "
            "an early good verdict: apiserver restarted or log cut short"
        )
    return None


def warm_up_watching(
    partial: PartialLogs,
    candidate: Candidate,
    early: EarlyStop,
    on_step: Callable[[], None] | None = None,
    trajectory: list[list[float]] | None = None,
    *,
    on_reading: Callable[[Reading], None] | None = None,
) -> EarlyEnd | None:
    """The warmup in steps, looking at the log after each; why it ended early, or None.

    Each look that reads a value is appended to `trajectory` ([warmup s, value]) and
    passed to `on_reading` (the progress line's metric so far). A
    look that fails (the log cannot be read or scored right now, no data yet) only
    means: go on warming up. A value at or above the threshold ends the warmup as
    bad; one below it ends it as good only as `EarlyStop.good_so_far` allows.
    """
    scorer = early.scorers()
    steps = partial.warmup_steps(candidate, early.every_s)
    whole = format_duration(early.warmup_s) if early.warmup_s else "the warmup"

    def shown(value: float) -> str:
        return format_value(value, early.metric)

    try:
        for elapsed in steps:
            if on_step is not None:
                on_step()
            value = _peek_value(partial, candidate, early.metric, scorer)
            if value is None:
                continue
            if trajectory is not None:
                trajectory.append([round(elapsed, 3), value])
            if on_reading is not None:
                on_reading(Reading(early.metric, value, early.threshold, elapsed, early.warmup_s))
            if early.threshold is None or (elapsed >= early.warmup_s > 0):
                continue  # only watching, or the warmup's end anyway: nothing ends early
            after = f"after {format_duration(elapsed)} of {whole}"
            limit = format_threshold(early.threshold, early.metric)
            if value >= early.threshold:
                return EarlyEnd("bad", elapsed, f"{early.metric} {shown(value)} >= {limit} {after}")
            if early.good_so_far(value, elapsed):
                onset_s = format_duration(early.onset_s or 0.0)
                return EarlyEnd(
                    "good",
                    elapsed,
                    f"{early.metric} {shown(value)} < {limit} {after}, on course for "
                    f"{shown(round(early.projected(value, elapsed)))} at the end; the bad endpoint "
                    f"passed the threshold after {onset_s}",
                )
        return None
    finally:
        close = getattr(steps, "close", None)
        if close is not None:
            close()


def _peek_value(
    partial: PartialLogs, candidate: Candidate, metric: str, scorer: GrowingScorer
) -> float | None:
    # Any failure of a look (a backend's, a [metrics.NAME] scorer's bug on a half-written
    # line) only means: go on warming up. The collected log is scored, and judged, as always.
    with contextlib.suppress(Exception):
        paths: list[Path] = partial.peek(candidate)
        return metric_value(scorer([str(p) for p in paths]), metric)
    return None


class Watched(Protocol):
    """A run of the bad endpoint as the policy reads it (a Measurement)."""

    @property
    def value(self) -> float | None: ...

    @property
    def trajectory(self) -> list[list[float]]: ...


class EarlyPolicy:
    """When a run's warmup is watched, and when it may end early (one per run).

    Search runs may end early (bad; good too with `early_good` once the bad endpoint's
    onset is known); endpoints are watched to learn that onset but run full length; the
    confirmation runs full length (it is the evidence, and the parent's run is what would
    catch a wrong early good verdict). A full-length run that contradicts an early good
    verdict withdraws them for the rest of the run (`withdrawn`).
    """

    def __init__(
        self,
        *,
        metric: str,
        check_every_s: float | None,
        early_good: bool,
        warmup_s: float,
        watchable: bool,  # the backend can show its log while it warms up (PartialLogs)
        growing_scorer: GrowingScorerFactory,
        withdrawn: bool = False,
    ) -> None:
        self.metric = metric
        self.every_s = check_every_s if watchable and is_monotone(metric) else None
        self.early_good = early_good
        self.warmup_s = warmup_s
        self.growing_scorer = growing_scorer
        self.withdrawn = withdrawn
        self.onset_s: float | None = None  # when the bad endpoint passed the threshold

    def stop_for(self, threshold: float | None, phase: str) -> EarlyStop | None:
        """How a warmup in `phase` is watched and may end early against `threshold`;
        None: not watched."""
        every = self.every_s
        if not every:
            return None
        if phase == "endpoint" and self.early_good:
            return EarlyStop(self.metric, None, every, self.warmup_s, self.growing_scorer)
        if phase != "bisect" or threshold is None:
            return None
        good_after = None
        if self.good_on():
            assert self.onset_s is not None
            good_after = EARLY_GOOD_FACTOR * self.onset_s
        return EarlyStop(
            self.metric,
            threshold,
            every,
            self.warmup_s,
            self.growing_scorer,
            good_after_s=good_after,
            onset_s=self.onset_s,
        )

    def good_on(self) -> bool:
        return self.early_good and self.onset_s is not None and not self.withdrawn

    def set_onset(self, bad_runs: Sequence[Watched], threshold: float) -> str | None:
        """Arm early good verdicts from the bad endpoint's watched runs; what to say, if any.

        The onset is the latest of the bad runs' first looks at or above the threshold
        (an upper bound: the crossing was at most one look earlier). Any bad run without
        one (not watched, or only cached from an earlier run) leaves them off.
        """
        if not self.early_good:
            return None
        measured = [m for m in bad_runs if m.value is not None]
        if any(not looks_agree(m.trajectory, m.value) for m in measured if m.value is not None):
            self.onset_s = None
            return (
                "early good verdicts off: a look at the bad endpoint's log read more than "
                "its collected log (the peek read another file?)"
            )
        onsets = [onset(m.trajectory, threshold) for m in measured]
        if not onsets or any(o is None for o in onsets):
            self.onset_s = None
            return (
                "early good verdicts off: the bad endpoint's warmup was not watched "
                "(a backend without partial logs, or runs measured before)"
            )
        self.onset_s = max(o for o in onsets if o is not None)
        if self.withdrawn:
            return "early good verdicts off: a full-length run contradicted one in this run"
        return (
            f"early good verdicts on: the bad endpoint passed the threshold after "
            f"{format_duration(self.onset_s)}; a search run below it for "
            f"{format_duration(EARLY_GOOD_FACTOR * self.onset_s)} and on course to stay "
            f"under half of it is good"
        )
