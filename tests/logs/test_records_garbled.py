"""Garbled input never crashes the scorer and is never data: counted as unparsable lines."""

from __future__ import annotations

import gzip
import io
import random
import tracemalloc
from pathlib import Path
from typing import IO, cast

import pytest

from bisector.logs import LogError, metric_value, score_logs
from bisector.logs.chunks import iter_chunks, range_chunks
from bisector.logs.records import OVERLONG_MARK
from tests.helpers.garbled_lines import GARBLED
from tests.helpers.log_lines import cri, header, request, text

CONFLICT = request("wrap42", 0, "PATCH", "/api/v1/nodes/n1/status", 409)


@pytest.mark.parametrize("name", sorted(GARBLED))
def test_a_garbled_line_is_unparsable_never_data(tmp_path: Path, name: str) -> None:
    path = tmp_path / "kube-apiserver.log"
    good = [
        CONFLICT.encode(),
        request("wrap42", 60, "PATCH", "/api/v1/nodes/n1/status", 409).encode(),
    ]
    path.write_bytes(good[0] + b"\n" + GARBLED[name] + b"\n" + good[1] + b"\n")
    scores = score_logs([path])
    assert scores.metrics["conflicts"] == 2
    assert scores.unparsable_lines == 1
    assert scores.metrics["unparsable_lines"] == 1
    assert metric_value(scores, "unparsable_lines") == 1
    assert scores.metrics["lines"] == 3
    assert scores.seen is not None and scores.seen.seconds == 60.0  # no garbled time used


@pytest.mark.parametrize("fmt", ["cri", "json"])
@pytest.mark.parametrize("name", sorted(GARBLED))
def test_a_garbled_line_in_cri_and_json_logs(tmp_path: Path, name: str, fmt: str) -> None:
    if fmt == "cri" and "nested" in name:
        pytest.skip("a bare JSON line with a good time in a CRI log is another format, not data")
    path = tmp_path / "kube-apiserver.log"
    if fmt == "cri":
        good = cri([request("v122", t, "PATCH", "/api/v1/nodes/n/status", 409) for t in (0, 1)])
    else:
        good = [request("json", t, "PATCH", "/api/v1/nodes/n/status", 409) for t in (0, 60)]
    path.write_bytes(text(good[:1]) + GARBLED[name] + b"\n" + text(good[1:]))
    scores = score_logs([path])
    assert scores.metrics["conflicts"] == 2
    assert scores.unparsable_lines == 1


def test_only_garbled_lines_is_not_a_log(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(GARBLED["glog month 13"] + b"\n" + GARBLED["glog hour 25"] + b"\n")
    with pytest.raises(LogError, match="2 of 2 lines garbled"):
        score_logs([path])


def test_an_over_long_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    huge = header(30) + "PATCH /api/v1/nodes/n/status: (1ms) 409 " + "x" * (3 << 20)
    path.write_bytes(text([CONFLICT, huge, CONFLICT]))
    scores = score_logs([path], chunk_size=1 << 20)  # the line spans several reads
    assert scores.metrics["conflicts"] == 2
    assert scores.unparsable_lines == 1
    assert scores.metrics["lines"] == 3
    gz = tmp_path / "kube-apiserver.log.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert score_logs([gz]).unparsable_lines == 1


def test_over_long_lines_in_parallel_ranges_are_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    huge = "y" * (3 << 20)
    path.write_bytes(text([CONFLICT] * 1000 + [huge] + [CONFLICT] * 1000 + [huge]))
    size = path.stat().st_size
    for step in (1 << 18, 1 << 20, 3 << 20):
        blocks = [
            bytes(block)
            for start in range(0, size, step)
            for block in range_chunks(str(path), start, min(size, start + step), 1 << 19)
        ]
        joined = b"".join(blocks)
        assert (
            joined.count(b"\n" + OVERLONG_MARK + b"\n") + joined.endswith(b"\n" + OVERLONG_MARK)
            == 2
        )
        assert joined.count(CONFLICT.encode()) == 2000


class _Endless(io.RawIOBase):
    """`total` bytes of `x` and never a newline, as a pipe would deliver them."""

    def __init__(self, total: int) -> None:
        self.left = total

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left, 1 << 16)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


def test_endless_input_without_newlines_keeps_memory_bounded() -> None:
    tracemalloc.start()
    try:
        stream = cast("IO[bytes]", _Endless(96 << 20))
        blocks = list(iter_chunks(stream, 1 << 20, max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [bytes(b) for b in blocks] == [b"\n" + OVERLONG_MARK]
    assert peak < 8 << 20  # 96 MiB went through; a few MiB were ever held


def test_endless_stdin_scores_as_one_unparsable_line(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text([CONFLICT]) + b"z" * (5 << 20))
    scores = score_logs([path], chunk_size=1 << 20)
    assert scores.metrics["conflicts"] == 1
    assert scores.unparsable_lines == 1


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_is_a_log_error(tmp_path: Path, damage: str) -> None:
    packed = gzip.compress(text([CONFLICT] * 20000))
    if damage == "truncated":
        packed = packed[: len(packed) // 2]
    else:
        middle = len(packed) // 2
        packed = (
            packed[:middle]
            + bytes(b ^ 0x5A for b in packed[middle : middle + 64])
            + (packed[middle + 64 :])
        )
    path = tmp_path / "kube-apiserver.log.gz"
    path.write_bytes(packed)
    with pytest.raises(LogError, match="corrupt or truncated gzip"):
        score_logs([path])


def test_fuzz_random_garbage_between_real_lines_never_raises(tmp_path: Path) -> None:
    """Seeded fuzz: real lines, garbled lines and random bytes in random order."""
    rng = random.Random(20170602)
    path = tmp_path / "kube-apiserver.log"
    for _ in range(40):
        lines: list[bytes] = []
        good = 0
        for k in range(rng.randrange(1, 40)):
            pick = rng.random()
            if pick < 0.4:
                lines.append(request("wrap42", k, "PATCH", "/api/v1/nodes/n/status", 409).encode())
                good += 1
            elif pick < 0.7:
                lines.append(GARBLED[rng.choice(sorted(GARBLED))])
            else:
                noise = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
                lines.append(noise.replace(b"\n", b""))
        path.write_bytes(b"\n".join(lines) + rng.choice([b"\n", b""]))
        try:
            scores = score_logs([path], chunk_size=rng.choice([64, 4096, 1 << 20]))
        except LogError:
            assert good == 0  # nothing readable at all: a clear error, not a traceback
            continue
        assert scores.metrics["conflicts"] == good
        assert scores.unparsable_lines <= len(lines) - good


@pytest.mark.parametrize("name", sorted(GARBLED))
def test_a_garbled_first_or_last_line_lends_the_window_no_time(tmp_path: Path, name: str) -> None:
    """A JSON line 100,000 levels deep (counted garbled) as the first line gave a log of
    60 s a window of 9 years (its 2017 time against today's glog lines); as the last, 0 s."""
    path = tmp_path / "kube-apiserver.log"
    good = [
        CONFLICT.encode(),
        request("wrap42", 60, "PATCH", "/api/v1/nodes/n1/status", 409).encode(),
    ]
    for lines in ([GARBLED[name], *good], [*good, GARBLED[name]]):
        path.write_bytes(b"\n".join(lines) + b"\n")
        scores = score_logs([path])
        assert scores.seen is not None and scores.seen.seconds == 60.0
