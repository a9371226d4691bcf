"""Large blocks of whole lines, each led by a newline, read straight into one buffer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _read_after(stream: IO[bytes], head: bytes, size: int) -> bytearray:
    """A buffer holding b"\\n", `head`, then up to `size` bytes read straight into it."""
    buf = bytearray(1 + len(head) + size)
    buf[0] = 10
    buf[1 : 1 + len(head)] = head
    filled = 1 + len(head)
    with memoryview(buf) as whole:
        while filled < len(buf):  # streams (gzip, pipes, sockets) return short reads
            with whole[filled:] as free:
                n = stream.readinto(free)  # type: ignore[attr-defined]
            if not n:
                break
            filled += n
    del buf[filled:]
    return buf


def iter_chunks(stream: IO[bytes], chunk_size: int) -> Iterator[bytearray]:
    """Whole lines in blocks of about `chunk_size`, each led by b"\\n" (see scan_chunk).

    Bytes are read straight into the block (no copies of 16 MiB strings); a line
    straddling two reads is carried into the next block.
    """
    carry = b""
    while True:
        buf = _read_after(stream, carry, chunk_size)
        if len(buf) == 1 + len(carry):  # end of input
            if carry:
                yield buf  # a truncated last line
            return
        cut = buf.rfind(b"\n") + 1
        if cut <= 1:  # one line longer than a chunk: keep reading
            carry = bytes(buf[1:])
            continue
        carry = bytes(buf[cut:])
        del buf[cut:]
        yield buf


def range_chunks(path: str, start: int, end: int, chunk_size: int) -> Iterator[bytearray]:
    """Lines whose first byte lies in [start, end) of a plain file, in led blocks."""
    with Path(path).open("rb") as handle:
        if start > 0:
            handle.seek(start - 1)
            handle.readline()  # the line owning byte start-1 belongs to the previous range
        pos = handle.tell()
        while pos < end:
            buf = _read_after(handle, b"", min(chunk_size, end - pos))
            if len(buf) == 1:
                return
            if buf[-1] != 10:
                cut = buf.rfind(b"\n") + 1
                if pos + len(buf) - 1 >= end or cut <= 1:
                    buf += handle.readline()  # finish the line (past `end` if it straddles it)
                else:
                    handle.seek(cut - len(buf), 1)  # re-read the partial line next time
                    del buf[cut:]
            pos = handle.tell()
            yield buf
