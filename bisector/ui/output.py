"""Standard streams whose failure never decides an exit code.

What bisector prints is a view of its answer; the answer is the exit code (and, for a
run, the report in the run directory). Output can fail in many ways: the reader of a
pipe is gone (`bisector run ... | head -1`, or `git bisect run ... | head` whose
children inherit the closed pipe), the disk is full (`> /dev/full`), the terminal was
closed, or a stream was closed before bisector started (`>&-`, `2>&-`, `<&-`).
Left alone, each of these ends a command with a code that means something else: click
turns EPIPE into exit 1, which `git bisect run` reads as *bad*; an OSError becomes
"bad input"; a closed stdin is an AttributeError. So:

- `guard_for_process` (the CLI's entry) makes file descriptors 0, 1 and 2 valid
  (/dev/null where one was closed: else the next file bisector opens would take its
  number, and a child's output or a stray write would land in the journal), and wraps
  sys.stdout and sys.stderr so that a failed write or flush is remembered, never
  raised; the failed descriptor is pointed at /dev/null, so what is still buffered,
  and every child started later, writes there harmlessly.
- The command goes on as if the output had been read: a run finishes (and tears
  down); a verdict stays the verdict. Where the output *is* the product (`score`
  without --threshold, `status`, `runs`, `history`), the command's exit code says
  the output failed (see bisector.exitcodes).
- A failure other than EPIPE (full disk, I/O error) is said once on stderr; EPIPE
  is the reader's choice and is not an error.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast


class GuardedStream(io.TextIOBase):
    """A text stream whose write and flush never raise; `failure` says why one failed."""

    def __init__(self, stream: TextIO, name: str, *, failure: str | None = None) -> None:
        super().__init__()
        self._stream = stream
        self._name = name
        self.failure = failure
        self.broken_pipe = False

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.broken_pipe = isinstance(exc, OSError) and exc.errno == errno.EPIPE
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.failure = why or type(exc).__name__
        _point_at_devnull(self._stream)
        if not self.broken_pipe and self._name == "stdout":
            print(
                f"bisector: warning: cannot write to stdout ({self.failure}); going on "
                "without it: the exit code is the answer",
                file=sys.stderr,
            )

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        try:
            return self.failure is None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._stream, "errors", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _point_at_devnull(stream: TextIO) -> None:
    """Point the failed stream's descriptor at /dev/null: what is still buffered is
    flushed there at exit (else Python reports it and exits 120), and children started
    later inherit a descriptor that works."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)


def _reopen_closed() -> set[int]:
    """Descriptors 0-2 that were closed, now open on /dev/null."""
    closed: set[int] = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    return closed


class _Started:
    stdin_closed = False  # standard input was closed when bisector started (`<&-`)


_started = _Started()


def stdin_closed() -> bool:
    """Standard input was closed when bisector started (`<&-`): `-` has nothing to read."""
    return _started.stdin_closed


def stdout_failure() -> str | None:
    """Why writing to stdout failed (after a flush), or None while it works."""
    stream = sys.stdout
    if stream is None:
        return "stdout is closed"
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
    failure = getattr(stream, "failure", None)
    return failure if isinstance(failure, str) else None


def _guard(closed: set[int]) -> None:
    _started.stdin_closed = 0 in closed or sys.stdin is None
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives with the process
    for fd, name in ((1, "stdout"), (2, "stderr")):
        current = cast("TextIO | None", getattr(sys, name))
        if isinstance(current, GuardedStream):
            continue
        failure = f"{name} is closed" if fd in closed or current is None else None
        if current is None:
            current = open(fd, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        setattr(sys, name, cast(TextIO, GuardedStream(current, name, failure=failure)))


def guard_for_process() -> None:
    """Guard the standard streams of this process until it exits (the CLI's entry)."""
    _guard(_reopen_closed())


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Guard sys.stdout and sys.stderr inside the block, then put the originals back (for
    the CLI called in-process: tests). File descriptors are left as they are."""
    saved = (sys.stdin, sys.stdout, sys.stderr, _started.stdin_closed)
    _guard(set())
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        sys.stdin, sys.stdout, sys.stderr, _started.stdin_closed = saved
