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
    TAIL_SPAN,
    URI_SPAN,
    VERBS,
    cacher_lines,
    messages,
    node_writes,
)
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.records import classify
from bisector.logs.scanner import scan_chunk

_REGEX = re.compile(b"\n" + p.OLD_NODE_WRITE)
REFERENCE = date(2017, 6, 3)


def _pick(rng: random.Random, options: list[bytes]) -> bytes:
    """The first option (the pattern's own piece) most of the time, else any other."""
    return options[0] if rng.random() < 0.8 else rng.choice(options[1:])


def _name(rng: random.Random) -> bytes:
    longest = URI_SPAN - 15  # `/api/v1/nodes/`, the name, the byte after it
    length = rng.choice([0, 1, 5, 13, 16, longest - 1, longest, longest + 1, longest + 9])
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789-._~!%"
    return bytes(rng.choice(alphabet) for _ in range(length))


def _header(rng: random.Random) -> bytes:
    time = rng.choice([b"0602 05:51:10.000001", b"0602 23:59:59.999999", b"1231 00:00:00.000000"])
    pid = _pick(
        rng,
        [
            *(b"      7", b"  12345", b"1234567", b"12345678", b"7", b"", b"   7 ", b" 7  7"),
            *(b"   x7", b"       "),  # the last: seven spaces, no digit
        ],
    )
    where = _pick(
        rng,
        [
            b"wrap.go:42",
            b"handlers.go:162",
            b"x" * (HEAD_SPAN - 10),
            b"y" * (HEAD_SPAN + 5),
            b"z" * (HEAD_SPAN - 10),  # behind a seven-column pid: `]` the window's last byte
            b"z" * (HEAD_SPAN - 9),  # and the first byte past it
            b"a]b",
            b"",
        ],
    )
    close = _pick(rng, [b"] ", b"]", b"]x ", b"]] "])
    return rng.choice([b"I", b"W", b"E", b"F"]) + time + b" " + pid + b" " + where + close


def _uri(rng: random.Random) -> bytes:
    base = _pick(rng, [b"/api/v1/nodes", b"/api/v1/node", b"/api/v1/nodesfoo"])
    named = b"/" + _name(rng) if rng.random() < 0.8 else b""
    tail = rng.choice([b"", b"/status", b"/status", b"/statusx", b"/proxy/logs", b"/"])
    query = _pick(rng, [b"", b"?timeout=10s", b"?a=b:c", b"?", b"?x y", b"?" + b"q" * 120])
    return base + named + tail + query


def _request(rng: random.Random) -> bytes:
    verb = rng.choice([b"PATCH", b"PATCH", b"POST", b"PUT", b"APPLY", b"GET", b"PATCHX", b"A"])
    sep = _pick(rng, [b": (", b":(", b" (", b": "])
    longest = TAIL_SPAN - 11  # after `/status: (`, before the `)` that must be in the window
    latency = _pick(
        rng,
        [b"3.1ms", b"350.127\xc2\xb5s", b"", b"30s", *(b"1" * n for n in (longest, longest + 1))],
    )
    close = _pick(rng, [b") ", b")", b" "])
    status = rng.choice([b"200", b"201", b"409", b"409", b"429", b"500", b"4", b"40", b"4090",
                         b"20000", b"0409", b"hijacked", b""])  # fmt: skip
    after = _pick(rng, [b" [[kubelet] 1:1]", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"", b"x", b"0"])
    return verb + b" " + _uri(rng) + sep + latency + close + status + after


def fuzz_chunk(rng: random.Random, n: int) -> bytes:
    lines = []
    for _ in range(n):
        line = _header(rng) + _request(rng)
        if rng.random() < 0.05:
            line = line[: rng.randrange(len(line) + 1)]  # cut anywhere
        lines.append(line)
    body = b"\n".join(lines)
    return b"\n" + (body + b"\n" if rng.random() < 0.5 else body)


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


CACHER_MESSAGES = [
    b"cacher (*api.Node): 100 objects queued in incoming channel.",
    b"Forcing watcher close due to unresponsiveness: *api.Node",
    b"AAA: dispatching event nr 7",
    b"cacher (*api.Node): dispatched event nr 7",
    b"bisector: dispatched node event nr 7",
    b"dispatching event nr 7",
]


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
