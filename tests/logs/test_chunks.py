"""Reading a stream in led blocks: small inputs cost small buffers, large ones whole chunks."""

from __future__ import annotations

import io
from typing import IO

import pytest

from bisector.logs import chunks


def _lines(n: int) -> bytes:
    return b"".join(b"I0602 05:51:%02d.000001 line %d\n" % (k % 60, k) for k in range(n))


def _record_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    asked: list[int] = []
    real = chunks._read_after

    def recording(stream: IO[bytes], head: bytes | bytearray, size: int) -> bytearray:
        asked.append(size)
        return real(stream, head, size)

    monkeypatch.setattr(chunks, "_read_after", recording)
    return asked


def _joined(blocks: list[bytearray]) -> bytes:
    assert all(block[:1] == b"\n" for block in blocks)  # each led by a newline
    return b"".join(bytes(block[1:]) for block in blocks)


def test_a_small_stream_is_read_with_a_small_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A buffer is zero-filled before the read: a log of a few KiB read with a 16 MiB
    chunk size zero-filled 32 MiB (the read and the one that sees the end)."""
    asked = _record_reads(monkeypatch)
    data = _lines(100)
    blocks = list(chunks.iter_chunks(io.BytesIO(data), 16 << 20))
    assert _joined(blocks) == data
    assert max(asked) <= 1 << 17


def test_reads_grow_to_the_chunk_size_and_lose_no_line(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _record_reads(monkeypatch)
    data = _lines(40_000)  # about 1.4 MiB
    chunk = 256 << 10
    blocks = list(chunks.iter_chunks(io.BytesIO(data), chunk))
    assert _joined(blocks) == data
    assert asked[0] < chunk and max(asked) == chunk
    assert all(block.count(b"\n") >= 1 for block in blocks)
    # every block but the last ends on a line's end: no line is cut in two
    assert all(bytes(block).endswith(b"\n") for block in blocks)


def test_a_line_longer_than_the_first_reads_is_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    long_line = b"I0602 05:51:10.000001 " + b"x" * (300 << 10) + b"\n"
    data = _lines(3) + long_line + _lines(3)
    blocks = list(chunks.iter_chunks(io.BytesIO(data), 1 << 20, max_line=1 << 20))
    assert _joined(blocks) == data
