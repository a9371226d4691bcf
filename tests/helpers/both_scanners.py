"""The same bytes scanned with the compiled pass (bisector/logs/_glogscan.c) and with
numpy alone (`glogscan._compiled` taken away), for tests that compare the two."""

from __future__ import annotations

import math
from dataclasses import astuple

import pytest

from bisector.logs import glogscan
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.scanner import scan_chunk


def scan_once(
    chunk: bytes, s: ScanSettings, monkeypatch: pytest.MonkeyPatch, *, compiled: bool
) -> Partial:
    out = Partial()
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(glogscan, "_compiled", None)
        scan_chunk(bytearray(chunk), s, out)
    return out


def counts(part: Partial) -> tuple[object, ...]:
    """Everything a scan counts, write times one by one (NaN, an undated write, comparable)."""
    times = [part.write_times[i] for i in range(len(part.write_times))]
    return (
        astuple(part)[:7],  # lines .. node_writes
        ["undated" if math.isnan(t) else t for t in times],
        part.cacher_hwm,
        part.cacher_full_at,
        part.forced_closes,
        part.dispatches,
        part.extra,
    )


def both_ways(
    chunk: bytes, s: ScanSettings, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(counts with the compiled pass, counts with numpy alone)."""
    return (
        counts(scan_once(chunk, s, monkeypatch, compiled=True)),
        counts(scan_once(chunk, s, monkeypatch, compiled=False)),
    )
