"""What scanning part of a run yields, and the settings every part is scanned with."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from datetime import date

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


@dataclass
class Partial:
    lines: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    has_requests: bool = False
    conflicts: int = 0
    node_writes: int = 0
    write_times: array[float] = field(default_factory=lambda: array("d"))
    cacher_hwm: dict[str, int] = field(default_factory=dict)
    cacher_full_at: dict[str, float] = field(default_factory=dict)
    forced_closes: dict[str, int] = field(default_factory=dict)
    dispatches: list[tuple[int, float]] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)

    def merge(self, later: Partial) -> None:
        """Append the partial of the input that follows this one."""
        self.lines += later.lines
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
