"""Cheap glog/klog line headers and a buffered writer for the simulated apiserver log.

A header is `Lmmdd hh:mm:ss.uuuuuu     PID file:line] `; the part up to the
seconds changes once a second, so it is formatted once per second and only the
microseconds are formatted per line.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import IO

PID_FIELD = "       7 "  # the apiserver's PID, space-padded to 7 columns as glog does
# Lines are kept as latin-1 strings holding UTF-8 bytes and written with the latin-1
# codec: encoding is then a plain copy, and "µ" still lands in the file as UTF-8.
MICRO_S = "µs".encode().decode("latin-1")


class Clock:
    """Formats simulated seconds since `start` as glog timestamps (no level letter)."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self._sec = -1
        self._prefix = ""

    def prefix(self, sec: int) -> str:
        """`mmdd hh:mm:ss.` for whole second `sec` of the simulation."""
        if sec != self._sec:
            moment = self.start + timedelta(seconds=sec)
            self._sec = sec
            self._prefix = moment.strftime("%m%d %H:%M:%S.")
        return self._prefix

    def stamp(self, t: float) -> str:
        """`mmdd hh:mm:ss.uuuuuu       7 ` for simulated time `t`."""
        us = int(t * 1e6)
        sec = us // 1_000_000
        return f"{self.prefix(sec)}{us - sec * 1_000_000:06d}{PID_FIELD}"


def go_duration(seconds: float) -> str:
    """A latency as Go prints a time.Duration: 350.127µs, 3.1ms, 1.5s (wire form)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3f}".rstrip("0").rstrip(".") + MICRO_S
    if seconds < 1.0:
        return f"{seconds * 1e3:.6f}".rstrip("0").rstrip(".") + "ms"
    return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"


class LogSink:
    """Collects line pieces in a list and writes them out in large blocks.

    Callers append a line as several pieces (header, path, latency, tail); joining
    them once per block in C is cheaper than building each line in Python.
    """

    def __init__(self, path: Path) -> None:
        self._file: IO[str] = path.open("w", encoding="latin-1", buffering=1 << 20)
        self.pieces: list[str] = []
        self.written = 0  # lines

    def flush(self) -> None:
        if self.pieces:
            block = "".join(self.pieces)
            self.written += block.count("\n")
            self._file.write(block)
            self.pieces.clear()

    def sync(self) -> None:
        """Everything appended so far on disk, for a reader of the log while it grows."""
        self.flush()
        self._file.flush()

    def close(self) -> None:
        self.flush()
        self._file.close()

    def __enter__(self) -> LogSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
