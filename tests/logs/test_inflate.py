"""A gzip log inflated on a thread is read whole, however busy the interpreter is.

The race (isal 1.9.1's igzip_threaded reader, which `sources._inflate` used): the reader
polls its queue for 10 ms, finds it empty, and then asks whether the worker thread is
still alive; a worker that handed over its last block and its end marker and ended in
between makes the reader return "end of file" with that block still queued. The log
reads short without an error: a lower count, a wrong verdict. It needs the reader to be
held up at that moment, which is what a busy interpreter does (three logs scored at once
by `history`/`nightly`, the GIL handed over every microsecond): measured, 9 of 600 reads
short before, 0 after. This is what made tests/ci/test_scoring.py
`test_runs_scored_on_threads_come_back_in_run_order` fail once under load.
"""

from __future__ import annotations

import gzip
import io
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, cast

import pytest
from isal import isal_zlib

from bisector.logs import sources
from bisector.logs.inflate import InflateAhead

DATA = b"".join(b"I0602 05:51:10.000001 7 wrap.go:42] line %d\n" % i for i in range(3000))
PACKED = gzip.compress(DATA)
READERS = 3  # logs scored at once (history's and nightly's default is 4)
READS = 150  # per reader: before the fix, about 1 read in 100 came back short


class _Network(io.RawIOBase):
    """An object read like a GCS chunk: each read of bytes waits about the reader's
    poll interval; at its end the size is known, so the last read is immediate."""

    def __init__(self, data: bytes, wait_s: float) -> None:
        super().__init__()
        self._data, self._pos, self._wait_s = data, 0, wait_s

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._pos < len(self._data):
            time.sleep(self._wait_s)
        size = min(len(buffer), len(self._data) - self._pos)
        buffer[:size] = self._data[self._pos : self._pos + size]
        self._pos += size
        return size


@pytest.fixture
def busy_interpreter() -> Iterator[None]:
    """Threads that keep the GIL busy, handed over every microsecond."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    spinners = [threading.Thread(target=spin, daemon=True) for _ in range(3)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
        sys.setswitchinterval(before)


@pytest.mark.slow
@pytest.mark.usefixtures("busy_interpreter")
def test_no_read_of_a_gzip_log_ends_early_on_a_busy_interpreter() -> None:
    short: list[int] = []

    def reader(k: int) -> None:
        for i in range(READS):
            wait_s = 0.0099 + ((i * 7 + k) % 5) * 0.00005  # around the old 10 ms poll
            with sources._inflate(cast(IO[bytes], _Network(PACKED, wait_s))) as stream:
                got = stream.read()
            if got != DATA:
                short.append(len(got))

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert short == [], f"{len(short)} of {READERS * READS} reads ended early: {short[:5]}"


def test_inflated_whole_member_after_member_and_errors_reach_the_reader() -> None:
    two = gzip.compress(b"first\n") + gzip.compress(b"second\n")  # concatenated members
    with sources._inflate(io.BytesIO(two)) as stream:
        assert stream.read() == b"first\nsecond\n"
    broken = bytearray(PACKED)
    for i in (12, 13, 20):  # an invalid deflate block
        broken[i] ^= 0xFF
    isal_error = cast("type[BaseException]", isal_zlib.IsalError)  # isal's stubs: a value
    with pytest.raises(isal_error), InflateAhead(io.BytesIO(bytes(broken))) as raw:
        raw.read()
    with pytest.raises(EOFError), InflateAhead(io.BytesIO(PACKED[: len(PACKED) // 2])) as raw:
        while raw.read(1 << 16):
            pass


def test_closing_early_stops_the_worker() -> None:
    stream = InflateAhead(io.BytesIO(gzip.compress(DATA * 40)), block=1 << 12)
    assert stream.read(10) == DATA[:10]
    stream.close()
    assert not stream._worker.is_alive()
