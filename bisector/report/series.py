"""The metric over a run's time, read from its apiserver log in one pass (the smoking gun).

Per second of the run (from its first log line): PATCH/APPLY 409 conflicts on node
objects, successful node writes, and the node cacher's highest `objects queued in
incoming channel` value. The reading reuses bisector.logs (rotated sets in time order,
gzip by content, gs:// and https://, led chunks of whole lines, the scanner's node-write
patterns and the cacher's dated-message matcher), so the series counts exactly what
`bisector score` counts; only the bucketing by time is added here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bisector.logs import patterns as p
from bisector.logs.cacher import SATURATED, dated
from bisector.logs.chunks import iter_chunks
from bisector.logs.partial import ScanSettings
from bisector.logs.reader import CHUNK_SIZE, order_sources
from bisector.logs.scanner import timed_node_writes  # the scanner's own matching
from bisector.logs.scores import NODE_CACHER_TYPES
from bisector.logs.sources import open_source

__all__ = ["SATURATED", "RunSeries", "read_series"]

_NODE_KINDS = {kind.encode() for kind in NODE_CACHER_TYPES}


@dataclass
class RunSeries:
    """Counts per second since the run's first log line."""

    t0: float | None = None
    conflicts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    writes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cacher: dict[int, int] = field(default_factory=dict)  # second -> highest queued value

    @property
    def seconds(self) -> int:
        last_cacher = max(self.cacher, default=-1) + 1
        return max(len(self.conflicts), len(self.writes), last_cacher)

    def per_minute(self, counts: np.ndarray, bucket_s: int) -> tuple[np.ndarray, np.ndarray]:
        """(bucket start in seconds, count per minute) over `bucket_s`-second buckets."""
        n = -(-self.seconds // bucket_s) if self.seconds else 0
        padded = np.zeros(n * bucket_s, dtype=np.int64)
        padded[: len(counts)] = counts[: len(padded)]
        sums = padded.reshape(n, bucket_s).sum(axis=1) if n else np.zeros(0)
        return np.arange(n) * bucket_s, sums * (60.0 / bucket_s)


def _add(counts: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    if not len(seconds):
        return counts
    binned = np.bincount(seconds, minlength=len(counts))
    binned[: len(counts)] += counts
    return binned


def _scan(chunk: bytes | bytearray, settings: ScanSettings, out: RunSeries) -> None:
    times, verbs, statuses = timed_node_writes(chunk, settings)
    if len(times) and out.t0 is None:
        out.t0 = float(times[0])
    if len(times) and out.t0 is not None:
        codes = np.array(statuses).astype(np.int64)
        verb = np.array(verbs)
        conflict = ((verb == b"PATCH") | (verb == b"APPLY")) & (codes == 409)
        success = (codes >= 200) & (codes < 300)
        second = np.floor(times - out.t0)
        keep = np.isfinite(second) & (second >= 0)
        out.conflicts = _add(out.conflicts, second[keep & conflict].astype(np.int64))
        out.writes = _add(out.writes, second[keep & success].astype(np.int64))
    if p.CACHER_HWM_MARK in chunk and out.t0 is not None:
        for match, t in dated(p.CACHER_HWM, chunk, settings):
            if match.group(1) in _NODE_KINDS and t >= out.t0:
                at = int(t - out.t0)
                out.cacher[at] = max(int(match.group(2)), out.cacher.get(at, 0))


def read_series(logs: Sequence[str | Path], chunk_size: int = CHUNK_SIZE) -> RunSeries:
    """One pass over a run's log files (in any order), memory bounded by the run's seconds."""
    ordered = order_sources(logs)
    out = RunSeries(t0=next((t for _, t in ordered if t is not None), None))
    for source, _ in ordered:
        settings = ScanSettings(reference=source.mtime.date())
        with open_source(source) as stream:
            for chunk in iter_chunks(stream, chunk_size):
                _scan(chunk, settings, out)
    return out
