"""Files a user names, opened without waiting for ever: a FIFO nobody writes to ends."""

from __future__ import annotations

import fcntl
import os
import select
import stat
from pathlib import Path
from typing import BinaryIO

# How long a FIFO may wait for its writer's first bytes (a `mkfifo` whose writer starts
# a moment later); nothing by then reads as empty.
WRITER_WAIT_S = 30.0


def open_input(path: Path | str, writer_wait_s: float | None = None) -> BinaryIO:
    """`path` opened for reading in binary. `open()` of a FIFO that nobody opens for
    writing blocks for ever (`--metrics-after FIFO` or `--config FIFO` would hang): a FIFO is
    opened without waiting, waits up to `writer_wait_s` (default WRITER_WAIT_S) for its
    writer's first bytes, and is then read as usual, to its writer's end; with no writer
    by then it reads as empty. `<(cmd)` is a pipe whose writer is already there."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            # Linux reports no hang-up on a FIFO no writer has opened yet: poll waits for
            # data (or a writer that came and went) up to the bound.
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            wait = WRITER_WAIT_S if writer_wait_s is None else writer_wait_s
            poller.poll(wait * 1000)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
