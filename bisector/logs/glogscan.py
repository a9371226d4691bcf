"""The compiled scan of a chunk of glog lines (_glogscan.c), where it was built.

It decides, in one pass over the bytes, what records.classify and nodewrites decide with
numpy for the usual chunk: every line a glog record with a time that exists, or a plain
continuation line (stack traces, `logging error output`). For any other chunk it gives
None and the numpy path decides all of it. Without a C compiler at install the extension
is not built (setup.py marks it optional): `available()` is False, `scan` always gives
None and the scores are the same in ~2x the time (`bisector score` of 1 GiB: 1.2 s
against 0.66 s); `bisector doctor` says which scanner runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from types import ModuleType

import numpy as np

from bisector.logs.records import valid_days


def _load() -> ModuleType | None:
    try:
        from bisector.logs import _glogscan  # type: ignore[attr-defined]
    except ImportError:
        return None
    module: ModuleType = _glogscan
    return module


_compiled = _load()


CONFLICT, SUCCESS = 1, 2  # bits of DatedWrites.kind


@dataclass(frozen=True)
class DatedWrites:
    """The decided node writes one by one, in line order: what a window or the dispatch
    lag reads (the counts of GlogChunk are enough without them)."""

    start: np.ndarray  # int64: the line's offset in the chunk
    seconds: np.ndarray  # float64: time of day, as timestamps.glog_seconds computes it
    month_day: np.ndarray  # uint16: MMDD as a number (its year comes from the reference)
    kind: np.ndarray  # uint8: CONFLICT | SUCCESS

    @staticmethod
    def of(found: tuple[bytes, bytes, bytes, bytes]) -> DatedWrites:
        start, seconds, month_day, kind = found
        return DatedWrites(
            np.frombuffer(start, dtype=np.int64),
            np.frombuffer(seconds, dtype=np.float64),
            np.frombuffer(month_day, dtype=np.uint16),
            np.frombuffer(kind, dtype=np.uint8),
        )


@dataclass(frozen=True)
class GlogChunk:
    """One chunk's lines as the compiled scan found them (offsets into the chunk)."""

    count: int  # lines
    first_record: int  # start of the first glog record (one exists)
    last_record: int  # and of the last
    # Node writes the byte windows decided (nodewrites.node_writes), and of them the node
    # PATCH/APPLY answered 409 and the 2xx ones.
    writes: int
    conflicts: int
    successes: int
    undecided: list[int]  # starts of write lines in a shape only the regex decides
    odd: list[int]  # starts of records whose header does not end in `] ` within the window
    cacher: list[int]  # starts of records whose message starts like a cacher one
    dated: DatedWrites  # the decided writes one by one


def available() -> bool:
    return _compiled is not None


@lru_cache(maxsize=64)
def _valid_day_bytes(reference: date) -> bytes:
    return valid_days(reference).tobytes()


def scan(chunk: bytes | bytearray, reference: date) -> GlogChunk | None:
    """The chunk's lines, or None where the numpy path must decide (or nothing is built)."""
    if _compiled is None:
        return None
    found = _compiled.scan(chunk, _valid_day_bytes(reference))
    if found is None:
        return None
    count, first, last, writes, conflicts, successes, undecided, odd, cacher, each = found
    return GlogChunk(
        count, first, last, writes, conflicts, successes, undecided, odd, cacher,
        DatedWrites.of(each),
    )  # fmt: skip
