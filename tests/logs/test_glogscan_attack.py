"""The compiled scan (bisector/logs/_glogscan.c) attacked as an adversarial log would.

tests/logs/test_glogscan.py compares it with numpy on the generators of the node-write
and line-by-line tests; this file brings its own: real-looking 2017 kube-apiserver logs
(wrap.go/handlers.go request lines of every verb, cacher high-water marks, forced watcher
closes, AAA dispatch lines, stack traces, `logging error output`), in time order so whole
files can be scored, then cut at every offset, mutated byte by byte at each field, given
CRLF ends, tabs, NUL bytes and (in)valid UTF-8. Every chunk is scanned with the compiled
module and without it (`glogscan._compiled = None`): every count must be the same. Files
are scored both ways too (parallel ranges, gzip, windows, extra metrics, stdin), the
module's own entry is fed buffers whose next byte is not a NUL (an over-read would count
it), wrong arguments, and many calls (no memory kept). Last, an install without a C
compiler still works and says so.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import os
import random
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from bisector.config import Section
from bisector.logs import glogscan, load_metric_definitions, reader
from bisector.logs.partial import ScanSettings
from bisector.logs.reader import score_logs
from tests.helpers.both_scanners import both_ways

REFERENCE = date(2017, 6, 3)
ROOT = Path(__file__).resolve().parents[2]

needs_compiled = pytest.mark.skipif(
    not glogscan.available(), reason="the C extension is not built (no compiler at install)"
)

NAMES = ["hollow-node-17", "n", "node-\u00b5", "x" * 49, "y" * 50, "z" * 60]
URIS = [
    "/api/v1/nodes/{n}/status",
    "/api/v1/nodes/{n}",
    "/api/v1/nodes",
    "/api/v1/nodes?watch=true&resourceVersion=1",
    "/api/v1/nodes/{n}/status?timeout=1s",
    "/api/v1/nodes/{n}/proxy/logs",
    "/api/v1/namespaces/kubemark/pods/p/status",
    "/apis/extensions/v1beta1/daemonsets",
    "/api/v1/nodesfoo",
]
LATENCIES = ["1.234ms", "350.127\u00b5s", "5.1s", "", "9" * 37, "9" * 38, "1ms) (2"]
STATUSES = ["200", "201", "409", "409", "404", "500", "hijacked", "4090", "20"]
TAILS = [" [[kubelet/v1.7.0 (linux/amd64) kubernetes/abc] 10.0.0.1:1234]", "", " ", "\t", "\r"]
MESSAGES = [
    "cacher (*api.Node): 100 objects queued in incoming channel.",
    "cacher (*api.Pod): 37 objects queued in incoming channel.",
    "Forcing watcher close due to unresponsiveness: *api.Node",
    "Forcing *api.Node watcher close due to unresponsiveness",
    "AAA: dispatching event nr 7",
    "cacher (*api.Node): dispatched event nr 9",
    "bisector: dispatched node event nr 3",
    'logging error output: "{\\"kind\\":\\"Status\\"}"',
    "Starting watch for /api/v1/nodes, rv=123 labels= fields= timeout=5m",
]
CONTINUATIONS = [
    "goroutine 1 [running]:",
    "\t/usr/local/go/src/runtime/panic.go:489 +0x26c",
    "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/server/filters.(*timeoutHandler)(0x1)",
    'logging error output: "k8s \u00b5"',
    "",
    "I0602 short",
    "PATCH /api/v1/nodes/n/status: (1ms) 409 x",
]
# A node PATCH answered 409 in glog's usual shape, and where each of its fields starts.
REQUEST = (
    b"I0602 05:51:10.000001       7 wrap.go:42] "
    b"PATCH /api/v1/nodes/hollow-node-1/status: (1.5ms) 409 [[k] 1:1]"
)
FIELDS = {
    "level": 0,
    "month": 1,
    "hour": 6,
    "micros": 15,
    "time's space": 21,
    "pid": 22,
    "pid's last": 28,
    "pid's space": 29,
    "file": 30,
    "bracket": 40,
    "message": 42,
    "verb's space": 47,
    "uri": 48,
    "nodes": 56,
    "name": 62,
    "status path": 75,
    "colon": 82,
    "latency": 85,
    "paren": 90,
    "status": 92,
    "status's last": 94,
    "after status": 95,
}


def _stamp(t: float) -> str:
    hh, rest = divmod(int(t), 3600)
    mm, ss = divmod(rest, 60)
    return f"0602 {hh:02d}:{mm:02d}:{ss:02d}.{int(t % 1 * 1e6):06d}"


def _pid(rng: random.Random) -> str:
    pid = rng.choice([7, 7, 7, 12345, 1234567])
    return rng.choice([f"{pid:>7d}"] * 6 + [f" {pid}", f"{pid:>8d}"])


def _line(rng: random.Random, t: float) -> bytes:
    """One line of a 2017 kube-apiserver log at time `t` (a continuation has none)."""
    kind = rng.random()
    if kind < 0.65:
        verb = rng.choice(["GET", "LIST", "WATCH", "PATCH", "PATCH", "PUT", "POST", "APPLY"])
        uri = rng.choice(URIS).replace("{n}", rng.choice(NAMES))
        where = rng.choice(["wrap.go:42", "handlers.go:161"])
        text = (
            f"I{_stamp(t)} {_pid(rng)} {where}] {verb} {uri}: ({rng.choice(LATENCIES)}) "
            f"{rng.choice(STATUSES)}{rng.choice(TAILS)}"
        )
    elif kind < 0.85:
        where = rng.choice(["cacher.go:566", "cache_watcher.go:1", "x" * 50 + ".go:1"])
        text = f"{rng.choice('IW')}{_stamp(t)} {_pid(rng)} {where}] {rng.choice(MESSAGES)}"
    else:
        text = rng.choice(CONTINUATIONS)
    return text.encode()


def real_log(rng: random.Random, n: int) -> bytes:
    """`n` lines in time order (files of it can be scored whole), newline-ended."""
    t, lines = 5 * 3600.0, []
    for _ in range(n):
        t += rng.random() * 0.02
        lines.append(_line(rng, t))
    return b"\n".join(lines) + b"\n"


def _alike(chunk: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether scan_chunk counts `chunk` the same with the compiled scan and without."""
    compiled, numpy_only = both_ways(chunk, ScanSettings(REFERENCE), monkeypatch)
    return compiled == numpy_only


@needs_compiled
@pytest.mark.parametrize("seed", range(6))
def test_real_logs_cut_at_every_offset_count_alike(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk may end anywhere in a line (the tail of a growing log) or begin anywhere."""
    data = real_log(random.Random(seed), 6)
    for cut in range(len(data) + 1):
        for piece in (data[:cut], data[cut:]):
            assert _alike(b"\n" + piece, monkeypatch), (seed, cut)


@needs_compiled
@pytest.mark.parametrize("field", FIELDS)
def test_every_byte_at_each_field_counts_alike(field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = FIELDS[field]
    rng = random.Random(at)
    around = [_line(rng, 5 * 3600.0) for _ in range(2)]
    for value in range(256):
        line = REQUEST[:at] + bytes([value]) + REQUEST[at + 1 :]
        assert _alike(b"\n" + b"\n".join([around[0], line, around[1]]) + b"\n", monkeypatch)
        assert _alike(b"\n" + around[0] + b"\n" + line, monkeypatch), value  # last, no newline


@needs_compiled
def test_each_position_dropped_doubled_or_replaced_counts_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = b"\x00\t\n\r ()/:?]09AP\x7f\x80\xb5\xc2\xff"
    for at in range(len(REQUEST) + 1):
        head, rest = REQUEST[:at], REQUEST[at:]
        variants = [head + rest[1:], head + rest[:1] + rest]  # a byte dropped, doubled
        variants += [REQUEST[:at] + bytes([v]) + REQUEST[at + 1 :] for v in values]
        for line in variants:
            assert _alike(b"\n" + line + b"\n" + REQUEST + b"\n", monkeypatch), line


@needs_compiled
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "change",
    [
        "crlf",
        "tab after the time",
        "tab after the header",
        "nul in a line",
        "micro sign",
        "latin-1 micro sign",
        "invalid utf-8",
        "surrogate in utf-8",
    ],
)
def test_line_ends_and_encodings_count_alike(
    seed: int, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In every kind of line: requests, cacher messages, continuations."""
    rng = random.Random(seed)
    lines = real_log(rng, 40).split(b"\n")
    swap = {
        "crlf": (b"", b"\r"),
        "tab after the time": (b" ", b"\t"),
        "tab after the header": (b"] ", b"]\t"),
        "nul in a line": (b"e", b"\x00"),
        "micro sign": (b"m", b"\xc2\xb5"),
        "latin-1 micro sign": (b"m", b"\xb5"),
        "invalid utf-8": (b"o", b"\xc3\x28"),
        "surrogate in utf-8": (b"o", b"\xed\xa0\x80"),
    }[change]
    for k in range(len(lines)):
        changed = list(lines)
        old, new = swap
        changed[k] = changed[k] + new if not old else changed[k].replace(old, new, 1)
        chunk = b"\n" + b"\n".join(changed)
        assert _alike(chunk, monkeypatch), (change, changed[k])


@needs_compiled
@pytest.mark.parametrize("width", range(19, 26))
def test_lines_about_a_header_wide_count_alike(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A glog header is 22 bytes: lines of 21, 22, 23 bytes, first, last and in between."""
    head = b"I0602 05:51:10.000001"
    for tail in (b"", b" ", b"  ", b" ]", b"] ", b" 7] P"):
        line = (head + tail)[:width]
        for chunk in (
            b"\n" + REQUEST + b"\n" + line,
            b"\n" + REQUEST + b"\n" + line + b"\n",
            b"\n" + line + b"\n" + REQUEST,
        ):
            assert _alike(chunk, monkeypatch), chunk


@needs_compiled
@pytest.mark.parametrize("width", range(35, 55))
def test_headers_at_the_window_limit_count_alike(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header ends at its first `]` within 48 bytes of the time's space: on either
    side of that limit, for a node write and a cacher message, last in the chunk or not."""
    for pid in (b"       7 ", b" 7 "):
        where = b"f" * (width - len(pid) - 1)
        for message in (
            b"PATCH /api/v1/nodes/n/status: (1ms) 409 x",
            b"cacher (*api.Node): 100 objects queued in incoming channel.",
        ):
            line = b"I0602 05:51:10.000001" + pid + where + b"] " + message
            assert _alike(b"\n" + line + b"\n", monkeypatch)
            assert _alike(b"\n" + REQUEST + b"\n" + line, monkeypatch)


def _entry_cases() -> list[bytes]:
    """Chunks for the module's own entry: every cut of lines whose fields run to the end."""
    lines = [
        REQUEST,
        b"I0602 05:51:10.000001       7 cacher.go:566] cacher (*api.Node): 100 objects",
        b"I0602 05:51:10.000001       7 cacher.go:566] AAA: dispatching event nr 7",
        b"I0602 05:51:10.000001       7 cacher.go:566] Forcing watcher close",
        b"I0602 05:51:10.000001       7 " + b"c" * 17 + b"] APPLY /api/v1/nodes/" + b"n" * 49,
        b"I0602 05:51:10.000001       7 w] PUT /api/v1/nodes: (" + b"1" * 47,
    ]
    cases = [b"", b"\n", b"I", b"\n\n", REQUEST + b"\n"]
    for line in lines:
        cases += [b"\n" + REQUEST + b"\n" + line[:cut] for cut in range(len(line) + 1)]
    return cases


@needs_compiled
@pytest.mark.parametrize("filler", [b" ", b"(", b"]", b")", b"\n", b"9", b"A"])
def test_the_scan_reads_no_byte_past_its_buffer(filler: bytes) -> None:
    """The same answer for bytes, a bytearray and a slice of a larger buffer whose next
    bytes are `filler` (a bytes object ends in a NUL, which would hide a read one byte
    too far: a status then followed by a space, a `]` ending a header, would count)."""
    compiled = glogscan._compiled
    assert compiled is not None
    days = glogscan._valid_day_bytes(REFERENCE)
    for data in _entry_cases():
        expected = compiled.scan(data, days)
        assert compiled.scan(bytearray(data), days) == expected
        padded = bytearray(filler * 3 + data + filler * 64)
        with memoryview(padded) as view:
            assert compiled.scan(view[3 : 3 + len(data)], days) == expected, data


@needs_compiled
@pytest.mark.parametrize(
    ("chunk", "days", "error"),
    [
        (b"\n" + REQUEST, b"", ValueError),
        (b"\n" + REQUEST, b"\x01" * 65535, ValueError),
        (b"\n" + REQUEST, b"\x01" * 65537, ValueError),
        (b"\n" + REQUEST, "days", TypeError),
        (b"\n" + REQUEST, None, TypeError),
        (b"\n" + REQUEST, 65536, TypeError),
        ("\n", None, TypeError),
        (None, None, TypeError),
    ],
)
def test_wrong_arguments_raise_and_let_the_buffer_go(
    chunk: object, days: object, error: type[Exception]
) -> None:
    compiled = glogscan._compiled
    assert compiled is not None
    held = bytearray(chunk) if isinstance(chunk, bytes) else chunk
    with pytest.raises(error):
        compiled.scan(held, days)
    if isinstance(held, bytearray):
        held += b"x"  # BufferError if the scan still held it


@needs_compiled
def test_a_strided_view_is_refused_not_read() -> None:
    compiled = glogscan._compiled
    assert compiled is not None
    days = glogscan._valid_day_bytes(REFERENCE)
    with memoryview(bytearray(b"\n" + REQUEST) * 2) as view, pytest.raises(BufferError):
        compiled.scan(view[::2], days)


@pytest.mark.slow
@needs_compiled
def test_many_calls_keep_no_memory() -> None:
    """Every way out of the scan (a result, None, a decoding that failed, a wrong argument)
    gives back what it allocated: 20,000 calls each leave nothing behind."""
    compiled = glogscan._compiled
    assert compiled is not None
    days = glogscan._valid_day_bytes(REFERENCE)
    chunk = b"\n" + REQUEST + b"\nI0602 05:51:10.000001 7 c] cacher (x): 1 objects\n\t\xc2\xb5s\n"
    calls: list[Callable[[], object]] = [
        lambda: compiled.scan(chunk, days),
        lambda: compiled.scan(b"\nI1302 05:51:10.000001       7 x] y\n", days),
        lambda: compiled.scan(b"\n" + REQUEST + b"\n\t\xc3\x28\n", days),
        lambda: compiled.scan(chunk, b"x"),
        lambda: compiled.scan(chunk, "x"),
    ]
    for call in calls:
        for _ in range(1000):  # warm: caches, free lists
            with contextlib.suppress(ValueError, TypeError):
                call()
        gc.collect()
        tracemalloc.start()
        try:
            for _ in range(20_000):
                with contextlib.suppress(ValueError, TypeError):
                    call()
            gc.collect()
            kept, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert kept < 20_000 * 8  # one object kept per call would be far more


@pytest.mark.slow
@needs_compiled
@pytest.mark.parametrize("seed", range(3))
def test_files_score_alike(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole files both ways: one stream, parallel ranges, gzip, small chunks, a window
    (dated: numpy alone), extra request metrics; garbled bytes sprinkled in."""
    rng = random.Random(seed)
    data = bytearray(real_log(rng, 6000))
    for _ in range(4):
        data[rng.randrange(len(data))] = rng.randrange(256)
    plain, packed = tmp_path / "kube-apiserver.log", tmp_path / "kube-apiserver.log.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(bytes(data)))
    extra = load_metric_definitions(
        Section(
            {
                "node_reads": {"path": "^/api/v1/nodes", "verb": ["GET", "LIST"]},
                "conflicts_any": {"path": ".", "statuses": [409]},
            },
            "bisector.toml",
            "metrics",
        )
    )
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1 << 16)
    settings: list[dict[str, object]] = [
        {},
        {"workers": 2, "chunk_size": 1 << 14},
        {"chunk_size": 4096},
        {"extra_metrics": extra},
        {"since": 1.0, "until": 30.0},
    ]
    for path in (plain, packed):
        for kwargs in settings:
            compiled = score_logs([path], **kwargs)  # type: ignore[arg-type]
            with monkeypatch.context() as m:
                m.setattr(glogscan, "_compiled", None)
                numpy_only = score_logs([path], **kwargs)  # type: ignore[arg-type]
            assert compiled.metrics == numpy_only.metrics, (path.name, kwargs)
            assert compiled.unparsable_lines == numpy_only.unparsable_lines


def _score(args: list[str], stdin: bytes, *, compiled: bool) -> tuple[int, str]:
    """`bisector score` in a process of its own, with or without the compiled scan."""
    off = "" if compiled else "import bisector.logs.glogscan as g; g._compiled = None; "
    code = off + "import sys; sys.argv[0] = 'bisector'; from bisector.entry import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "score", *args],
        input=stdin,
        capture_output=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    return done.returncode, done.stdout.decode()


@pytest.mark.slow
@needs_compiled
def test_score_of_stdin_is_the_same_json(tmp_path: Path) -> None:
    data = real_log(random.Random(11), 4000)
    args = ["--json", "--metric", "conflicts", "--threshold", "50", "--since", "2s", "-"]
    for argv in (args, [*args[:5], "-"]):
        compiled = _score(argv, data, compiled=True)
        assert compiled == _score(argv, data, compiled=False)
        assert compiled[0] in (0, 1)  # a verdict, not an error


def test_an_install_without_a_c_compiler_still_works(tmp_path: Path) -> None:
    """setup.py marks the extension optional: with CC=/bin/false the build says so and
    succeeds, nothing is built, the scanner is numpy's and doctor says which runs."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the real install is this case already")
    copy = tmp_path / "src"
    shutil.copytree(
        ROOT / "bisector", copy / "bisector", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    shutil.copy(ROOT / "setup.py", copy)
    shutil.copy(ROOT / "pyproject.toml", copy)
    shutil.copy(ROOT / "README.md", copy)
    env = {**os.environ, "CC": "/bin/false"}
    built = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=copy,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr.decode()
    assert b"failed" in built.stdout + built.stderr  # the warning an installer sees
    assert not list(copy.rglob("_glogscan*.so"))
    doctor = subprocess.run(
        [sys.executable, "-m", "bisector", "doctor"],
        cwd=copy,  # this copy first on sys.path: its bisector, without the extension
        capture_output=True,
        check=False,
        timeout=120,
    )
    scanner = next(line for line in doctor.stdout.decode().splitlines() if "log scanner" in line)
    assert "numpy only" in scanner
