"""The compiled node-write loop gives, line for line, what the regex gives."""

from __future__ import annotations

import random
import re
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from bisector.logs import kernel, score_logs
from bisector.logs import patterns as p
from bisector.logs import reader as reader_mod
from bisector.logs.timestamps import glog_seconds
from tests.logs.lines import FORMATS, MIX_CONFLICTS, MIX_WRITES, cri, header, mix_log, text

pytestmark = pytest.mark.skipif(not kernel.available(), reason="numba is not installed")

REFERENCE = date(2017, 6, 3)
OLD_NODE = re.compile(p.PLAIN + p.OLD_NODE_WRITE)
TRICKY = [
    header(1) + "PATCH /api/v1/nodes/n1/status: (3.1ms) 409 [[kubelet] 10.0.0.1:1]",
    header(2) + "PATCH /api/v1/nodes/n1/status?timeout=10s&a=b:c: (3.1ms) 200 [[k] 1:1]",
    header(3) + "PUT /api/v1/nodes: (1m0.0005s) 201 [[k] 1:1]",
    header(4) + "POST /api/v1/nodes?x=1: (1ms) 200\t[[k] 1:1]",
    header(5) + "PATCH /api/v1/nodes/a:b/status: (1ms) 409 [[k] 1:1]",
    header(6) + "PATCH /api/v1/nodes/a/b: (1ms) 409 [[k] 1:1]",
    header(7) + "PATCH /api/v1/nodes/a/status/status: (1ms) 409 [[k] 1:1]",
    header(8) + "PATCH /api/v1/nodes/status: (1ms) 409 [[k] 1:1]",
    header(9) + "PATCH /api/v1/nodesfoo/x: (1ms) 409 [[k] 1:1]",
    header(10) + "PATCH /api/v1/nodes/x: (1ms 409 [[k] 1:1]",
    header(11) + "PATCH /api/v1/nodes/x: (1ms) 4090 [[k] 1:1]",
    header(12) + "PATCH /api/v1/nodes/x: (1ms) 12345678901 [[k] 1:1]",
    header(13) + "PATCH /api/v1/nodes/x: (1ms) 0 [[k] 1:1]",
    header(14) + "PATCH /api/v1/nodes/x: (1ms) hijacked [[k] 1:1]",
    header(15) + "PATCH /api/v1/nodes/x: (1ms) 409",
    header(16) + "PATCH /api/v1/nodes/x : (1ms) 409 [[k] 1:1]",
    header(17) + "PATCH /api/v1/nodes/x: (1ms)  409 [[k] 1:1]",
    header(18) + "PATCH  /api/v1/nodes/x: (1ms) 409 [[k] 1:1]",
    header(19, where="my file.go:1") + "PATCH /api/v1/nodes/x: (1ms) 409 [[k] 1:1]",
    header(20, where="a]b.go:1") + "PATCH /api/v1/nodes/x: (1ms) 409 [[k] 1:1]",
    header(21).replace("       7 ", " 123456789 ") + "PATCH /api/v1/nodes/x: (1ms) 409 [x]",
    header(22).replace("       7 ", "7 ") + "PATCH /api/v1/nodes/x: (1ms) 200 [x]",
    header(23).replace("       7 ", "       ") + "PATCH /api/v1/nodes/x: (1ms) 200 [x]",
    header(24, "X") + "PATCH /api/v1/nodes/x: (1ms) 409 [x]",
    header(25) + "APPLY /api/v1/nodes/x: (1ms) 409 [x]\r",
    header(26) + "PATCH /api/v1/nodes/n\xff\xfe/status: (1ms) 409 [x]",
    "\tPATCH /api/v1/nodes/n9/status: (1.0ms) 409 [[kubelet] 10.0.0.1:1]",
    'logging error output: "' + header(27) + 'PATCH /api/v1/nodes/n/status: (1ms) 409 [x]\\n"',
    header(28),
    "I0602",
    "",
]


def _by_regex(chunk: bytes) -> tuple[list[int], list[int], np.ndarray]:
    rows = OLD_NODE.findall(chunk)
    return (
        [kernel.VERBS.index(verb) for _, verb, _ in rows],
        [int(status) for _, _, status in rows],
        glog_seconds([field for field, _, _ in rows], REFERENCE),
    )


def _by_kernel(chunk: bytes) -> tuple[list[int], list[int], np.ndarray, int]:
    def regex(start: int) -> tuple[bytes, bytes, bytes]:
        found = OLD_NODE.match(chunk, start - 1)
        if found is None:
            raise LookupError(start)
        a, b, c = found.groups()
        return a, b, c

    assert kernel.warm_up()
    rows, newlines = kernel.old_node_writes(chunk, REFERENCE, regex)
    return rows.verbs.tolist(), rows.statuses.tolist(), rows.times, newlines


def _assert_same(chunk: bytes) -> None:
    verbs, statuses, times = _by_regex(chunk)
    k_verbs, k_statuses, k_times, newlines = _by_kernel(chunk)
    assert (k_verbs, k_statuses) == (verbs, statuses)
    np.testing.assert_allclose(k_times, times, rtol=0, atol=1e-6)
    assert newlines == chunk.count(b"\n")


@pytest.mark.parametrize("tail", ["\n", ""], ids=["whole", "truncated"])
def test_tricky_lines_match_as_the_regex_does(tail: str) -> None:
    chunk = ("\n" + "\n".join(TRICKY) + tail).encode("utf-8", "surrogateescape")
    chunk = chunk.replace("\xff\xfe".encode(), b"\xff\xfe")
    _assert_same(chunk)
    _assert_same(chunk + TRICKY[0].encode())  # a last line cut after its status


def test_random_mutations_match_as_the_regex_does() -> None:
    rng = random.Random(46851)
    alphabet = b" \t\r\x00\xff]):?/0123456789PATCHstau(["
    lines = [line.encode("utf-8", "surrogateescape") for line in TRICKY[:4]]
    for _ in range(30):
        out = []
        for _ in range(200):
            line = bytearray(rng.choice(lines))
            for _ in range(rng.randrange(3)):
                at = rng.randrange(len(line) + 1)
                op = rng.randrange(3)
                if op == 0 and at < len(line):
                    del line[at]
                elif op == 1:
                    line.insert(at, rng.choice(alphabet))
                elif at < len(line):
                    line[at] = rng.choice(alphabet)
            out.append(bytes(line).replace(b"\n", b""))
        _assert_same(b"\n" + b"\n".join(out) + rng.choice([b"\n", b""]))


@pytest.fixture
def compiled_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "KERNEL_MIN_BYTES", 0)


@pytest.mark.usefixtures("compiled_loop")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "cri"])
def test_every_format_through_the_compiled_loop(tmp_path: Path, fmt: str, wrapped: bool) -> None:
    lines = mix_log(fmt)
    if wrapped:
        lines = cri(lines)
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(lines, "\r\n").replace(b"linux/amd64", b"linux/\xff\xfeamd64"))
    for chunk_size in (64, 4096):
        scores = score_logs([path], chunk_size=chunk_size, workers=1)
        assert scores.metrics["conflicts"] == MIX_CONFLICTS
        assert scores.metrics["node_writes"] == MIX_WRITES
        assert scores.metrics["lines"] == len(lines)


@pytest.mark.usefixtures("compiled_loop")
def test_compiled_loop_dates_writes_for_dispatch_lag_and_windows(tmp_path: Path) -> None:
    lines = []
    for i in range(10):
        lines.append(header(i) + f"PATCH /api/v1/nodes/n{i}/status: (1ms) 200 [x]")
        lines.append(header(i + 0.5) + f"PATCH /api/v1/nodes/n{i}/status: (1ms) 409 [x]")
    lines.append(header(20, "E", "cacher.go:610") + "AAA: dispatching event nr 3")
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(lines))
    scores = score_logs([path], chunk_size=200, workers=1, since=2.0, until=30.0)
    assert scores.metrics["conflicts"] == 8
    assert scores.metrics["node_writes"] == 8
    assert scores.metrics["dispatch_lag_s"] == {"max": 18.0, "last": 18.0}
