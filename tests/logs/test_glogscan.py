"""The compiled scan (bisector/logs/_glogscan.c) gives exactly what the numpy path gives.

scan_chunk reads the usual chunk (glog records and plain continuation lines, with or
without each write's time) in one compiled pass and every other chunk with numpy. Each
test below scores the same chunk both ways (the compiled module taken away for the
second) and compares every count, on the fuzz of the node-write matcher
(tests/logs/test_nodewrites.py: near misses of each field, pid fields glog never writes,
names and latencies longer than the windows, truncated lines), the line-by-line fuzz of
test_reader_fast_path.py (stack traces, impossible times, binary noise, over-long lines), every
log generation of tests/helpers/log_lines.py, cacher messages behind every header shape, and
random bytes.
"""

from __future__ import annotations

import random
import shutil
from datetime import date, datetime

import pytest

from bisector.logs import glogscan
from bisector.logs.nodewrites import cacher_lines, messages, node_writes
from bisector.logs.partial import ScanSettings
from bisector.logs.records import classify
from tests.helpers.both_scanners import both_ways
from tests.helpers.log_fuzz import fuzz_chunk, fuzz_log
from tests.helpers.log_lines import CACHER_MESSAGES, FORMATS, START, cri, header, request

REFERENCE = date(2017, 6, 3)
LEADS = (b"cacher (", b"Forcing ", b"dispatch", b"AAA: ", b"bisector")  # nodewrites
REQUEST = b"I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 409 x"

needs_compiled = pytest.mark.skipif(
    not glogscan.available(), reason="the C extension is not built (no compiler at install)"
)


def _both_ways(
    chunk: bytes, monkeypatch: pytest.MonkeyPatch, **settings: object
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    return both_ways(chunk, ScanSettings(REFERENCE, **settings), monkeypatch)  # type: ignore[arg-type]


def _led(lines: list[bytes], newline_at_end: bool = True) -> bytes:
    return b"\n" + b"\n".join(lines) + (b"\n" if newline_at_end else b"")


def _epoch(when: datetime) -> float:
    """glog times are the master's clock, read as UTC-naive (timestamps.py)."""
    return (when - datetime(1970, 1, 1)).total_seconds()


# Undated (counts only), every write dated (dispatch lag), a window of minutes inside
# fuzz_log's (from tests/helpers/log_lines.START) and one that cuts fuzz_chunk's days (0602 05:51
# and 23:59 of 2017, 1231 of 2016): the compiled pass gives each write's time for the last
# three.
SETTINGS = [
    {},
    {"need_times": True},
    {"since": _epoch(START) + 60, "until": _epoch(START) + 200},
    {"since": _epoch(datetime(2017, 6, 2, 12)), "until": _epoch(datetime(2017, 6, 3))},
]
IDS = ["counts", "dated", "minutes", "day"]


@needs_compiled
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
@pytest.mark.parametrize("seed", range(40))
def test_node_write_fuzz_counts_alike(
    seed: int, settings: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    chunk = fuzz_chunk(rng, rng.choice([1, 3, 40, 400]))
    compiled, numpy_only = _both_ways(chunk, monkeypatch, **settings)
    assert compiled == numpy_only


@needs_compiled
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
@pytest.mark.parametrize("seed", range(30))
def test_line_by_line_fuzz_counts_alike(
    seed: int, settings: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of fuzz_log cut at line ends: some with garbled lines (numpy decides
    all of them), most with only records and stack traces (the compiled scan does)."""
    rng = random.Random(500 + seed)
    data = fuzz_log(rng, 400).replace(b"w" * (1 << 20), b"\x00")  # the readers' over-long mark
    lines = data.split(b"\n")
    taken = 0
    while taken < len(lines):
        n = rng.randrange(1, 40)
        chunk = _led(lines[taken : taken + n], newline_at_end=rng.random() < 0.8)
        taken += n
        compiled, numpy_only = _both_ways(chunk, monkeypatch, **settings)
        assert compiled == numpy_only, chunk


def test_the_fuzz_reaches_both_paths() -> None:
    """Without this the tests above could compare the numpy path with itself."""
    rng = random.Random(7)
    data = fuzz_log(rng, 2000)
    lines = data.split(b"\n")
    outcomes = {glogscan.scan(_led(lines[k : k + 5]), REFERENCE) is None for k in range(0, 2000, 5)}
    assert outcomes == {True, False} if glogscan.available() else outcomes == {True}


@needs_compiled
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("need_times", [False, True])
def test_every_log_generation_counts_alike(
    fmt: str, need_times: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        request(fmt, t, verb, uri, status).encode()
        for t, (verb, uri, status) in enumerate(
            [
                ("PATCH", "/api/v1/nodes/n1/status", 409),
                ("PATCH", "/api/v1/nodes/n1/status", 200),
                ("PUT", "/api/v1/nodes/n2", 201),
                ("GET", "/api/v1/nodes/n2", 200),
                ("PATCH", "/api/v1/namespaces/kubemark/pods/p/status", 409),
            ]
        )
    ]
    behind_cri = [row.encode() for row in cri([row.decode() for row in rows])]
    for chunk in (_led(rows), _led(behind_cri)):
        compiled, numpy_only = _both_ways(chunk, monkeypatch, need_times=need_times)
        assert compiled == numpy_only


@needs_compiled
@pytest.mark.parametrize("message", CACHER_MESSAGES)
@pytest.mark.parametrize(
    "head",
    [
        b"I0602 05:51:10.000001       7 cacher.go:566] ",
        b"I0602 05:51:10.000001 7 cacher.go:566] ",  # pid not padded
        b"I0602 05:51:10.000001       7 " + b"c" * 60 + b".go:1] ",  # header past the window
        b"I0602 05:51:10.000001       7 x]y] ",  # first `]` without its space
        b'I0602 05:51:10.000001       7 json "msg":"',  # no `] ` at all
    ],
)
def test_cacher_messages_count_alike(
    head: bytes, message: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    for many in (1, 20):  # a block of those lines, or (over 1 line in 8) the whole chunk
        chunk = _led([REQUEST, *[head + message] * many, REQUEST])
        compiled, numpy_only = _both_ways(chunk, monkeypatch)
        assert compiled == numpy_only
        assert glogscan.scan(chunk, REFERENCE) is not None


@needs_compiled
@pytest.mark.parametrize(
    "message",
    [
        *CACHER_MESSAGES,
        *(lead[:-1] + b"x" for lead in LEADS),
        b"cacher",
        b"AAA:",
        b"",
    ],
)
def test_the_same_lines_are_handed_to_the_cacher_handlers(message: bytes) -> None:
    """Messages that start like a cacher one, or nearly, last in the chunk or not."""
    for newline_at_end in (True, False):
        chunk = _led([REQUEST, REQUEST[:42] + message], newline_at_end)
        found = glogscan.scan(chunk, REFERENCE)
        lines = classify(chunk, REFERENCE)
        assert found is not None
        expected = cacher_lines(chunk, lines, messages(chunk, lines)).tolist()
        assert found.cacher == [int(lines.starts[i]) for i in expected]


@needs_compiled
@pytest.mark.parametrize("seed", range(20))
def test_what_the_compiled_scan_reports_is_what_numpy_finds(seed: int) -> None:
    """Line count, first and last record, cacher lines and node writes of a chunk, against
    records.classify and nodewrites (odd headers and undecided lines go to the regex)."""
    rng = random.Random(900 + seed)
    chunk = fuzz_chunk(rng, 200)
    found = glogscan.scan(chunk, REFERENCE)
    lines = classify(chunk, REFERENCE)
    if found is None:
        assert lines.garbled or not lines.glog.any()
        return
    msgs = messages(chunk, lines)
    starts = lines.starts.tolist()
    assert found.count == lines.count
    glog = [starts[i] for i in lines.glog.nonzero()[0].tolist()]
    assert (found.first_record, found.last_record) == (glog[0], glog[-1])
    assert found.odd == [starts[i] for i in msgs.odd.tolist()]
    near = set(cacher_lines(chunk, lines, msgs).tolist()) - set(msgs.odd.tolist())
    assert found.cacher == [starts[i] for i in sorted(near)]
    writes = node_writes(chunk, lines, msgs)
    decided = set(writes.line.tolist()) - {starts.index(s) for s in found.undecided + found.odd}
    assert found.writes == len(decided)
    assert found.conflicts == sum(
        bool(c) for i, c in zip(writes.line, writes.conflict, strict=True) if i in decided
    )
    assert found.successes == sum(
        bool(c) for i, c in zip(writes.line, writes.success, strict=True) if i in decided
    )


@needs_compiled
@pytest.mark.parametrize(
    ("what", "line"),
    [
        ("an impossible time (garbled)", b"I1302 05:51:10.000001       7 wrap.go:42] x"),
        ("hour 24", b"I0602 24:00:00.000001       7 wrap.go:42] x"),
        ("Feb 30", b"I0230 05:51:10.000001       7 wrap.go:42] x"),
        ("a CRI record", b"2017-06-02T05:51:10.123456789Z stderr F " + REQUEST[1:]),
        ("a JSON record", b'{"ts":1496382670000.1,"msg":"HTTP","verb":"PATCH"}'),
        ("a control byte in a continuation", b"goroutine 1 [running]:\x01"),
        ("the over-long-line mark", b"\x00"),
        ("invalid UTF-8 in a continuation", b"\tfoo \xc3\x28 bar"),
        ("a UTF-16 surrogate in UTF-8", b"\t\xed\xa0\x80"),
    ],
)
def test_other_chunks_are_left_to_numpy(what: str, line: bytes) -> None:
    assert glogscan.scan(_led([REQUEST, line, REQUEST]), REFERENCE) is None, what


@needs_compiled
@pytest.mark.parametrize("byte", range(256))
def test_a_continuation_is_left_to_numpy_exactly_where_a_byte_garbles_it(byte: int) -> None:
    chunk = _led([REQUEST, b"\tat foo " + bytes([byte]) + b" bar", REQUEST])
    assert (glogscan.scan(chunk, REFERENCE) is None) == bool(classify(chunk, REFERENCE).garbled)


@needs_compiled
def test_text_continuations_stay_compiled_and_no_record_at_all_does_not() -> None:
    trace = [b"goroutine 1 [running]:", b"\tlatency 350.127\xc2\xb5s", b"", b"I0602 short"]
    found = glogscan.scan(_led([REQUEST, *trace, REQUEST]), REFERENCE)
    assert found is not None
    assert (found.count, found.writes, found.conflicts) == (6, 2, 2)
    assert glogscan.scan(_led(trace), REFERENCE) is None
    assert glogscan.scan(REQUEST + b"\n", REFERENCE) is None  # not led by a newline
    assert glogscan.scan(b"\n", REFERENCE) is None


@needs_compiled
@pytest.mark.parametrize("seed", range(10))
def test_random_bytes_and_every_cut_of_a_line(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes past the chunk's end read as zeros, never as memory: a request line cut at
    every length (each field's window then runs off the end), and random bytes."""
    rng = random.Random(seed)
    line = header(1.0).encode() + b"PATCH /api/v1/nodes/hollow-node-1/status: (1.5ms) 409 [[k] 1:1]"
    for cut in range(len(line) + 1):
        compiled, numpy_only = _both_ways(_led([REQUEST, line[:cut]], False), monkeypatch)
        assert compiled == numpy_only, cut
    noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
    compiled, numpy_only = _both_ways(_led([REQUEST, noise, REQUEST]), monkeypatch)
    assert compiled == numpy_only


def test_the_install_built_the_compiled_scan() -> None:
    """Where a C compiler exists, `pip install` (make setup) builds the extension: without
    it every score runs ~2x slower and nothing else says so (setup.py marks it optional)."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the numpy scanner reads every chunk")
    assert glogscan.available()
