"""One process at a time: an flock on a file that names its holder."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector.errors import BisectorError


@contextlib.contextmanager
def exclusive(path: Path, busy: Callable[[str], BisectorError]) -> Iterator[None]:
    """Hold `path` locked while the block runs, or raise `busy(holder)` at once.

    The kernel drops the lock when the process dies, even by kill -9, so a crashed
    run never leaves a stale lock behind.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BisectorError(
            f"cannot open lock file {path}: {exc.strerror or exc}; make it a writable file"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text(encoding="utf-8").strip() or "another process"
            raise busy(holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        yield
    finally:
        os.close(fd)
