"""The cacher handlers read only the lines whose message starts like theirs, and count
exactly what a search of the whole chunk counts.

Where every record of a chunk is a glog line, scanner._cacher_text hands the handlers a
block of just those lines (nodewrites.cacher_lines), dated or not. A search of the whole
chunk by each handler (what the dated path did, and what CRI and JSON chunks still get)
is the reference. Both must agree on chunks
that mix the messages with request lines and with traps: messages quoted inside other
messages or on continuation lines (never counted), a header whose first `]` lacks its
space (cacher.dated reads the message after the first `] `), a truncated last line.
"""

from __future__ import annotations

import random
from datetime import date

import pytest

from bisector.logs import cacher
from bisector.logs.nodewrites import messages
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.records import classify
from bisector.logs.scanner import _cacher_text, scan_chunk

REFERENCE = date(2017, 6, 3)
REQUEST = b"wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 200 [[kubelet] 10.0.0.1:1]"
MESSAGES = [
    b"cacher (*api.Node): 100 objects queued in incoming channel.",
    b"cacher (*api.Pod): 12 objects queued in incoming channel.",
    b"Forcing watcher close due to unresponsiveness: *api.Node",
    b"Forcing *api.Pod watcher close due to unresponsiveness",
    b"AAA: dispatching event nr 7",
    b"cacher (*api.Node): dispatched event nr 8",
    b"bisector: dispatched node event nr 9",
    b"dispatching event nr 10",
]
FILES = [b"cacher.go:566] ", b"x]y] ", b"cache_watcher.go:123] "]  # x]y]: an odd header
TRAPS = [
    b"wrap.go:42] GET /x?q=cacher (*api.Node): 100 objects queued in incoming channel.",
    b'logging error output: "Forcing watcher close due to unresponsiveness: x"',  # no header
    b"wrap.go:42] note: AAA: dispatching event nr 99",  # quoted inside another message
]


def _line(second: int, usec: int, body: bytes, header: bool = True) -> bytes:
    if not header:
        return body
    return f"I0602 05:51:{second:02d}.{usec:06d}       7 ".encode() + body


def _chunk(rng: random.Random, n: int, share: float, truncated: bool) -> bytes:
    lines = []
    for k in range(n):
        second, usec = 10 + k * 40 // n, k
        roll = rng.random()
        if roll < share:
            lines.append(_line(second, usec, rng.choice(FILES) + rng.choice(MESSAGES)))
        elif roll < share + 0.05:
            trap = rng.choice(TRAPS)
            lines.append(_line(second, usec, trap, header=trap.startswith(b"wrap")))
        else:
            lines.append(_line(second, usec, REQUEST))
    last = _line(50, 0, b"cacher.go:566] " + MESSAGES[0])
    return b"\n" + b"\n".join(lines) + b"\n" + last + (b"" if truncated else b"\n")


Counts = tuple[dict[str, int], dict[str, float], dict[str, int], list[tuple[int, float]]]


def _cacher_counts(chunk: bytes, need_times: bool) -> Counts:
    out = Partial()
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE, need_times=need_times), out)
    return out.cacher_hwm, out.cacher_full_at, out.forced_closes, out.dispatches


def _whole_chunk_counts(chunk: bytes) -> Counts:
    """Each cacher handler over the whole chunk, ungated."""
    out, s = Partial(), ScanSettings(REFERENCE)
    cacher.cacher_hwm(chunk, s, out)
    cacher.forced_closes(chunk, s, out)
    cacher.dispatches(chunk, s, out)
    return out.cacher_hwm, out.cacher_full_at, out.forced_closes, out.dispatches


@pytest.mark.parametrize("truncated", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_cacher_lines_alone_count_what_the_whole_chunk_counts(seed: int, truncated: bool) -> None:
    chunk = _chunk(random.Random(seed), 400, share=0.03, truncated=truncated)
    lines = classify(chunk, REFERENCE)
    text = _cacher_text(chunk, chunk, lines, messages(chunk, lines))
    assert text is not None and len(text) < len(chunk) // 10  # the narrow path is taken
    hwm, full_at, closes, dispatches = _cacher_counts(chunk, need_times=False)
    assert (hwm, full_at, closes, dispatches) == _whole_chunk_counts(chunk)
    assert _cacher_counts(chunk, need_times=True) == _whole_chunk_counts(chunk)
    assert hwm and full_at and closes and dispatches  # every handler counted something
    assert 99 not in [nr for nr, _ in dispatches]  # the quoted dispatch is no dispatch


def test_many_cacher_lines_search_the_whole_chunk_alike() -> None:
    chunk = _chunk(random.Random(9), 400, share=0.5, truncated=False)
    lines = classify(chunk, REFERENCE)
    assert _cacher_text(chunk, chunk, lines, messages(chunk, lines)) is chunk
    assert _cacher_counts(chunk, need_times=False) == _whole_chunk_counts(chunk)
    assert _cacher_counts(chunk, need_times=True) == _whole_chunk_counts(chunk)


def test_no_cacher_line_means_no_search() -> None:
    chunk = b"\n" + b"\n".join(_line(10, k, REQUEST) for k in range(50)) + b"\n"
    lines = classify(chunk, REFERENCE)
    assert _cacher_text(chunk, chunk, lines, messages(chunk, lines)) is None


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("need_times", [False, True])
def test_a_status_longer_than_an_int64_is_no_status_counted_and_no_crash(
    compiled: bool, need_times: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bisector score LOG --since 0s` of a node PATCH answered `99999999999999999999`
    ended in an internal error (numpy's OverflowError reading statuses as int64): the
    status is neither a conflict nor a success, dated or not; nor is `0409` (read as the
    number 409, it counted when dated only)."""
    from bisector.logs import glogscan

    if not compiled:
        monkeypatch.setattr(glogscan, "_compiled", None)
    chunk = b"".join(
        b"\n" + _line(k, 1, b"wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) " + status + b" x")
        for k, status in enumerate([b"99999999999999999999", b"409", b"200", b"0409"])
    )
    out = Partial()
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE, need_times=need_times), out)
    assert (out.conflicts, out.node_writes) == (1, 1)
