"""The progress vocabulary: what the measurement and the search tell whoever shows a run.

`Progress` is what the evaluator, the prefetcher, the teardowns and the pipeline call;
`PhaseStarted` (bisector.measure.evaluation) and `Reading` (bisector.measure.early) are
what they hand it. Nothing here prints: the plain and live lines are
bisector.ui.progress_lines, beside the entry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bisector.durations import format_duration
from bisector.numbers import format_threshold, format_value

# The phases of one evaluation, as they begin (`ready`: the launch succeeded).
Phase = Literal["build", "launch", "ready", "warmup", "collect", "teardown"]
PHASES: tuple[Phase, ...] = ("build", "launch", "ready", "warmup", "collect", "teardown")


@dataclass(frozen=True)
class Reading:
    """One look at a watched warmup's growing log: the metric so far."""

    metric: str
    value: float
    threshold: float | None  # None: only watched (an endpoint), nothing decided
    elapsed_s: float  # warmup time of the look
    warmup_s: float  # the whole warmup (0: unknown)

    def describe(self) -> str:
        """`conflicts 742 >= 77: bad after 30s of 5m00s`, in the early verdicts' words."""
        shown = f"{self.metric} {format_value(self.value, self.metric)}"
        whole = f" of {format_duration(self.warmup_s)}" if self.warmup_s > 0 else ""
        after = f"after {format_duration(self.elapsed_s)}{whole}"
        if self.threshold is None:
            return f"{shown} {after}"
        limit = format_threshold(self.threshold, self.metric)
        if self.value >= self.threshold:
            return f"{shown} >= {limit}: bad {after}"
        return f"{shown} < {limit} {after}"


@dataclass(frozen=True)
class PhaseStarted:
    """A phase of one slot's evaluation begins now."""

    slot: int
    commit: str
    phase: Phase
    expected_s: float | None = None  # this run's measured mean, else the model's guess
    started: float = field(default_factory=time.monotonic)


class Progress(Protocol):
    def status(
        self,
        phase: str,
        candidate: str = "",
        steps_left: int | None = None,
        eta_s: float | None = None,
    ) -> None: ...

    def note(self, line: str) -> None: ...

    def detail(self, line: str) -> None:
        """A line about how an evaluation goes (builds ahead and the like): said with -v and
        in the run directory's log, not in the run's default output."""
        ...

    def phase(self, event: PhaseStarted) -> None: ...

    def reading(self, slot: int, reading: Reading) -> None: ...

    def evaluated(self, slot: int) -> None: ...

    def prefetching(self, commit: str, running: bool) -> None: ...

    def stop(self) -> None: ...
