"""Gzip inflated on a thread of its own, a block ahead of the scanner, and never short.

isal inflates ~3x faster than zlib and releases the GIL while it does, so a thread
inflating the next block while the scanner reads this one hides most of it. isal ships
such a reader (`igzip_threaded.open(..., threads=1)`), but in isal 1.9.1 its `readinto`
decides "end of file" from `queue empty` and then `worker thread not alive`: a worker
that puts its last block (and its end marker) and ends between those two looks loses
that block, and the read ends early *without an error*. A log read short is a smaller
count, i.e. a wrong verdict: with three readers on a busy interpreter (three runs
scored at once, as `history` and `nightly` do) 9 of 600 reads came back short
(tests/logs/test_inflate.py; it is what made tests/ci/test_scoring.py's
`test_runs_scored_on_threads_come_back_in_run_order` fail under load). Here the end
and any error travel through the queue itself, and the reader waits for them.
"""

from __future__ import annotations

import io
import queue
import threading
from typing import IO

from isal import igzip

BLOCK_BYTES = 1 << 20  # inflated bytes per hand-over (isal's own threaded reader uses 1 MiB)
_AHEAD = 2  # blocks inflated ahead of the reader at most: bounded memory
_PUT_WAIT_S = 0.1  # how often a blocked worker looks whether the reader has gone
_JOIN_WAIT_S = 1.0


class InflateAhead(io.RawIOBase):
    """The inflated bytes of the gzip stream `raw` (one member after another), inflated
    on a daemon thread; its errors are raised by `read` as the inflater raised them."""

    def __init__(self, raw: IO[bytes], block: int = BLOCK_BYTES) -> None:
        super().__init__()
        self._gzip = igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[no-untyped-call]
        self._block = block
        self._queue: queue.Queue[bytes | BaseException] = queue.Queue(_AHEAD)
        self._stop = threading.Event()
        self._pending = memoryview(b"")
        self._ended = False
        self._worker = threading.Thread(target=self._inflate, daemon=True, name="inflate")
        self._worker.start()

    def _inflate(self) -> None:
        try:
            while not self._stop.is_set():
                data = self._gzip.read(self._block)
                self._hand_over(data)  # b"": the end, always handed over
                if not data:
                    return
        except BaseException as exc:  # re-raised on the reader's thread
            self._hand_over(exc)

    def _hand_over(self, item: bytes | BaseException) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_PUT_WAIT_S)
                return
            except queue.Full:
                continue

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if not self._pending:
            if self._ended:
                return 0
            item = self._queue.get()  # the worker always ends with b"" or an exception
            if isinstance(item, BaseException):
                self._ended = True
                raise item
            if not item:
                self._ended = True
                return 0
            self._pending = memoryview(item)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        if not self.closed:
            self._stop.set()
            while True:  # a worker waiting to hand a block over sees the stop
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
            # A worker still waiting on the network is a daemon: it is not waited for long.
            self._worker.join(timeout=_JOIN_WAIT_S)
            if not self._worker.is_alive():
                self._gzip.close()
        super().close()


def inflate_ahead(raw: IO[bytes]) -> IO[bytes]:
    """A buffered reader of `raw`'s inflated bytes (see InflateAhead)."""
    return io.BufferedReader(InflateAhead(raw), buffer_size=BLOCK_BYTES)
