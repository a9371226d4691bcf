"""The vectorised node-write matcher decides every line exactly as the anchored regex does.

nodewrites.py reads each field of all candidate lines at once through fixed-width
windows and hands the lines it cannot decide to the regex. The fuzz below builds lines
from pieces that match the pattern only in part (a `]` without its space, `nodesfoo`,
an empty node name, `/statusx`, a query with and without its `:`, a latency without
its `)`, statuses of one to five digits or none, every kind of whitespace after the
status or none at the chunk's end, pid fields glog never writes, names and file names
longer than the windows) and checks each line against `\\n` + patterns.OLD_NODE_WRITE.
"""

from __future__ import annotations

import random
import re
from datetime import date

import numpy as np
import pytest

from bisector.logs import patterns as p
from bisector.logs.nodewrites import (
    HEAD_SPAN,
    VERBS,
    cacher_lines,
    messages,
    node_writes,
)
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.records import classify
from bisector.logs.scanner import scan_chunk
from tests.helpers.log_fuzz import fuzz_chunk
from tests.helpers.log_lines import CACHER_MESSAGES

_REGEX = re.compile(b"\n" + p.OLD_NODE_WRITE)
REFERENCE = date(2017, 6, 3)


def _by_regex(
    chunk: bytes, starts: np.ndarray, glog: np.ndarray
) -> list[tuple[int, int, bool, bool]]:
    rows = []
    for i in np.flatnonzero(glog).tolist():
        match = _REGEX.match(chunk, int(starts[i]) - 1)
        if match is not None:
            verb, status = match.group(2), match.group(3)
            conflict = verb in (b"PATCH", b"APPLY") and status == b"409"
            success = len(status) == 3 and status[:1] == b"2"
            rows.append((i, VERBS.index(verb), conflict, success))
    return rows


@pytest.mark.parametrize("seed", range(30))
def test_every_line_decided_as_the_regex_decides(seed: int) -> None:
    rng = random.Random(seed)
    chunk = fuzz_chunk(rng, rng.choice([1, 3, 40, 400]))
    lines = classify(chunk, REFERENCE)
    found = node_writes(chunk, lines, messages(chunk, lines))
    got = list(
        zip(
            found.line.tolist(),
            found.verb.tolist(),
            found.conflict.tolist(),
            found.success.tolist(),
            strict=True,
        )
    )
    assert got == _by_regex(chunk, lines.starts, lines.glog)


def test_the_fuzz_reaches_every_outcome() -> None:
    """The generator makes conflicts, 2xx writes, other statuses and near misses."""
    rng = random.Random(99)
    chunk = fuzz_chunk(rng, 3000)
    lines = classify(chunk, REFERENCE)
    rows = _by_regex(chunk, lines.starts, lines.glog)
    assert sum(r[2] for r in rows) > 20
    assert sum(r[3] for r in rows) > 20
    assert sum(not r[2] and not r[3] for r in rows) > 20
    assert len(rows) < int(lines.glog.sum()) / 2  # most lines miss the pattern somewhere


@pytest.mark.parametrize("seed", range(8))
def test_fast_counts_equal_the_dated_regex_path(seed: int) -> None:
    """scan_chunk without dates (vectorised) and with dates (the regex path) agree."""
    rng = random.Random(1000 + seed)
    chunk = fuzz_chunk(rng, 500)  # `0409` among its statuses: neither path reads a number
    fast, dated = Partial(), Partial()
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE), fast)
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE, need_times=True), dated)
    assert (fast.conflicts, fast.node_writes) == (dated.conflicts, dated.node_writes)
    assert fast.conflicts and fast.node_writes


@pytest.mark.parametrize("message", CACHER_MESSAGES)
@pytest.mark.parametrize(
    "header",
    [
        b"I0602 05:51:10.000001       7 cacher.go:566] ",
        b"I0602 05:51:10.000001 7 cacher.go:566] ",  # pid not padded
        b"I0602 05:51:10.000001       7 " + b"c" * (HEAD_SPAN + 4) + b".go:1] ",  # long file
        b"I0602 05:51:10.000001       7 x]y] ",  # first `]` without its space
        b'I0602 05:51:10.000001       7 json "msg":"',  # no `] ` at all
    ],
)
def test_cacher_gate_never_hides_a_counted_message(header: bytes, message: bytes) -> None:
    """The gate skips the cacher searches only where none can count; with dates (no gate)
    and without, every cacher metric is the same."""
    request = b"I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 200 x"
    chunk = b"\n" + request + b"\n" + header + message + b"\n" + request + b"\n"
    lines = classify(chunk, REFERENCE)
    assert len(cacher_lines(chunk, lines, messages(chunk, lines)))
    gated, ungated = Partial(), Partial()
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE), gated)
    scan_chunk(bytearray(chunk), ScanSettings(REFERENCE, need_times=True), ungated)
    assert gated.cacher_hwm == ungated.cacher_hwm
    assert gated.forced_closes == ungated.forced_closes
    assert gated.dispatches == ungated.dispatches


def test_cacher_gate_says_no_for_request_lines_only() -> None:
    request = b"I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 200 x"
    chunk = b"\n" + b"\n".join([request] * 50) + b"\n"
    lines = classify(chunk, REFERENCE)
    assert not len(cacher_lines(chunk, lines, messages(chunk, lines)))


@pytest.mark.parametrize("width", range(1, HEAD_SPAN))
def test_message_found_wherever_the_header_bracket_lies_in_its_window(width: int) -> None:
    """messages() reads a narrow window first and the full one (HEAD_SPAN bytes from the
    space after the time) only where the narrow one holds no `]`: a file:line of any
    width inside the full window gives the message start the regex's header gives."""
    where = (b"f" * width)[: max(0, width - 3)] + b":42"[: min(3, width)]
    line = b"I0602 05:51:10.000001       7 " + where + b"] PATCH /api/v1/nodes/n: (1ms) 409 x"
    chunk = b"\n" + line + b"\n"
    lines = classify(chunk, REFERENCE)
    msgs = messages(chunk, lines)
    header = re.compile(rb"\n" + p.HEADER).match(chunk)
    assert header is not None
    inside = 21 + 9 + len(where) < 21 + HEAD_SPAN  # `]` within the full window
    assert msgs.line.tolist() == ([0] if inside else [])
    assert msgs.odd.tolist() == ([] if inside else [0])
    if inside:
        assert msgs.start.tolist() == [header.end()]
    found = node_writes(chunk, lines, msgs)
    assert (found.line.tolist(), found.conflict.tolist()) == ([0], [True])
