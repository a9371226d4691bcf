"""What scanning part of a run yields, and the settings every part is scanned with."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date
from itertools import accumulate

from bisector.logs.definitions import RequestMetric


@dataclass(frozen=True)
class ScanSettings:
    reference: date  # supplies the year glog headers lack
    since: float | None = None  # absolute epoch seconds
    until: float | None = None
    extra: tuple[RequestMetric, ...] = ()
    # Keep every node write's time (dispatch lag); otherwise chunks without dispatch lines
    # take the faster path that counts without dating.
    need_times: bool = False


class WriteTimes:
    """Times of the successful node writes in log order (the dispatch lag pairs the Nth
    dispatch with the Nth write). Writes counted without their time (the fast path) are
    kept as run lengths, not 8 bytes each, so memory does not grow with the log; indexing
    one gives NaN."""

    def __init__(self) -> None:
        self._runs: list[array[float] | int] = []
        self._length = 0
        self._starts: list[int] | None = None  # first index of each run, built on lookup

    def add_undated(self, count: int) -> None:
        if count <= 0:
            return
        if self._runs and isinstance(self._runs[-1], int):
            self._runs[-1] += count
        else:
            self._runs.append(count)
        self._length += count
        self._starts = None

    def add(self, times: array[float]) -> None:
        if not times:
            return
        last = self._runs[-1] if self._runs else 0
        if isinstance(last, int):
            self._runs.append(array("d", times))
        else:
            last.extend(times)
        self._length += len(times)
        self._starts = None

    def extend(self, later: WriteTimes) -> None:
        for run in later._runs:
            if isinstance(run, int):
                self.add_undated(run)
            else:
                self.add(run)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> float:
        if not 0 <= index < self._length:
            raise IndexError(index)
        if self._starts is None:
            sizes = [run if isinstance(run, int) else len(run) for run in self._runs]
            self._starts = [0, *accumulate(sizes)][:-1]
        k = bisect_right(self._starts, index) - 1
        run = self._runs[k]
        return math.nan if isinstance(run, int) else run[index - self._starts[k]]


@dataclass
class Partial:
    lines: int = 0
    unparsable: int = 0  # garbled lines (records.py): counted, never data
    first_ts: float | None = None
    last_ts: float | None = None
    has_requests: bool = False
    conflicts: int = 0
    node_writes: int = 0
    write_times: WriteTimes = field(default_factory=WriteTimes)
    cacher_hwm: dict[str, int] = field(default_factory=dict)
    cacher_full_at: dict[str, float] = field(default_factory=dict)
    forced_closes: dict[str, int] = field(default_factory=dict)
    dispatches: list[tuple[int, float]] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)

    def merge(self, later: Partial) -> None:
        """Append the partial of the input that follows this one."""
        self.lines += later.lines
        self.unparsable += later.unparsable
        if self.first_ts is None:
            self.first_ts = later.first_ts
        if later.last_ts is not None:
            self.last_ts = later.last_ts
        self.has_requests |= later.has_requests
        self.conflicts += later.conflicts
        self.node_writes += later.node_writes
        self.write_times.extend(later.write_times)
        for kind, value in later.cacher_hwm.items():
            self.cacher_hwm[kind] = max(value, self.cacher_hwm.get(kind, 0))
        for kind, at in later.cacher_full_at.items():
            self.cacher_full_at.setdefault(kind, at)
        for kind, n in later.forced_closes.items():
            self.forced_closes[kind] = self.forced_closes.get(kind, 0) + n
        self.dispatches.extend(later.dispatches)
        for name, n in later.extra.items():
            self.extra[name] = self.extra.get(name, 0) + n


def in_window(t: float, s: ScanSettings) -> bool:
    return (s.since is None or t >= s.since) and (s.until is None or t < s.until)
