"""The one place the tool starts external programs.

Backends call only `run`; tests replace only `run`. Every call has a timeout and
runs in its own process group, so a timeout or Ctrl-C/SIGTERM kills the whole
tree a script started, not just the shell. The child's stdout and stderr go to
unlinked temporary files, not pipes: the wait is for the process to exit, so a
daemon the command leaves behind holding its output cannot stretch the wait
past the deadline. Failures raise `CommandError` carrying the command and what
it printed; `log=` keeps every command's output in a file (see `bisector.proclog`).

Every child gets BISECTOR_OWNER (this process's pid and start time) in its
environment, and inside `track_groups(path)` every group started is recorded,
so a later process can stop what a killed run left behind (`bisector.orphans`).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bisector import orphans, proclog
from bisector.orphans import OWNER_ENV, stop_marked, stop_orphans, track_groups

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "OWNER_ENV",
    "CmdResult",
    "CommandError",
    "kill_unprotected",
    "logging_to",
    "protected",
    "run",
    "stop_marked",
    "stop_orphans",
    "track_groups",
]

DEFAULT_TIMEOUT_S = 3600.0
_unprotected: set[int] = set()  # groups of running commands an interrupt may kill


def kill_unprotected() -> int:
    """SIGKILL the process groups of the running commands that are no teardown.

    Only registered commands: one whose start is still under way is caught by the
    next call (the interrupt handler calls this while it waits), never a teardown
    whose registration has not happened yet. Returns how many groups were killed.
    """
    with _lock:
        groups = list(_unprotected)
    for pgid in groups:
        _kill_group(pgid)
    return len(groups)


_local = threading.local()
# How much of the output an error message carries: the last lines, within this many chars.
_TAIL_LINES = 5
_TAIL_CHARS = 800
_CMD_CHARS = 80


@dataclass(frozen=True)
class CmdResult:
    code: int
    stdout: str
    stderr: str


def last_lines(text: str, lines: int = _TAIL_LINES, chars: int = _TAIL_CHARS) -> list[str]:
    """The last non-blank `lines` of `text`, dropping older ones beyond `chars` in total."""
    kept: list[str] = []
    size = 0
    for raw in reversed(text.splitlines()):
        line = raw.strip()
        if not line:
            continue
        if len(kept) == lines or (kept and size + len(line) > chars):
            break
        kept.append(line[-chars:])
        size += len(kept[-1])
    return kept[::-1]


def short_command(cmd: Sequence[str], chars: int = _CMD_CHARS) -> str:
    """The command line, abbreviated: the full text is in the command log."""
    text = shlex.join(cmd).replace("\n", " ")
    return text if len(text) <= chars else text[: chars - 1] + "…"


class CommandError(Exception):
    """An external command failed, timed out, or could not be started.

    The message is `` `cmd` why: last lines `` with the command abbreviated, so
    the actual error text survives any cut of the message that follows it.
    """

    def __init__(
        self, cmd: Sequence[str], code: int | None, stdout: str, stderr: str, why: str = ""
    ) -> None:
        self.cmd = list(cmd)
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.why = why or _exit_text(code)
        tail = " | ".join(last_lines(stderr if stderr.strip() else stdout))
        msg = f"`{short_command(self.cmd)}` {self.why}"
        super().__init__(f"{msg}: {tail}" if tail else msg)

    @property
    def timed_out(self) -> bool:
        return self.why.startswith("timed out")


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _kill_group(pgid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# Groups `run` is waiting for, so an interrupt that lands inside Popen (the child
# already started, its Popen object not yet ours) can find the group it left.
_lock = threading.Lock()
_known: set[int] = set()


@contextmanager
def protected() -> Iterator[None]:
    """Commands this thread starts inside the block are spared by interrupt kills."""
    before = getattr(_local, "protected", False)
    _local.protected = True
    try:
        yield
    finally:
        _local.protected = before


def _kill_unknown_children() -> None:
    """Kill the groups led by children of ours that no `run` call knows of."""
    me = os.getpid()
    with _lock:
        known = set(_known)
    for pid, ppid, pgid in orphans.children_stats():
        if ppid == me and pgid == pid and pid not in known:
            _kill_group(pid)


@contextmanager
def _stdin_file(text: str | None) -> Iterator[IO[bytes] | int]:
    if text is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(text.encode())
        handle.seek(0)
        yield handle


def _read(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", errors="replace")


@contextmanager
def logging_to(path: Path | None) -> Iterator[None]:
    """Commands this thread runs inside the block keep their output in `path` (unless a
    call names its own `log`): the evaluator files each phase's commands, whatever the
    backend, as evals/NNN/<phase>.log."""
    before = getattr(_local, "log", None)
    _local.log = path
    try:
        yield
    finally:
        _local.log = before


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    check: bool = True,
    stdin: str | None = None,
    log: Path | None = None,
) -> CmdResult:
    """Run `cmd` (an argv list; use ["bash", "-c", script] for shell text).

    `env` is added to the current environment, not a replacement for it. With
    `log`, a block (command line, output, exit code, duration) is appended to
    that file, whatever the outcome. Raises CommandError when the program is
    missing, times out (its whole process group is then killed), or (with
    `check`) exits non-zero. An exception while waiting (Ctrl-C, SIGTERM turned
    into KeyboardInterrupt) kills the whole group before it propagates.
    """
    full_env = {**os.environ, **(env or {}), OWNER_ENV: orphans.owner_tag()}
    entry = proclog.begin(log if log is not None else getattr(_local, "log", None), cmd, cwd)
    start = time.monotonic()
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        _stdin_file(stdin) as inp,
    ):
        # One try from Popen to the end of the wait: an interrupt anywhere in it
        # (even inside Popen, once the child runs) kills the command's group.
        popen: subprocess.Popen[bytes] | None = None
        code: int | None = None
        try:
            popen = subprocess.Popen(
                list(cmd),
                cwd=cwd,
                env=full_env,
                stdin=inp,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            with _lock:
                _known.add(popen.pid)
                if not getattr(_local, "protected", False):
                    _unprotected.add(popen.pid)  # a teardown is never in it
            orphans.record_group(popen.pid, cmd)
            code = popen.wait(timeout)
            why = ""
        except subprocess.TimeoutExpired:
            assert popen is not None
            _kill_group(popen.pid)
            popen.wait()
            code, why = None, f"timed out after {timeout:g}s"
        except OSError as exc:
            if popen is not None:  # pragma: no cover - wait() itself failing
                _kill_group(popen.pid)
                raise
            why = f"could not start: {exc}"
            entry.end("", str(exc), why, time.monotonic() - start)
            raise CommandError(cmd, None, "", str(exc), why=why) from exc
        except BaseException as exc:
            # Ctrl-C or SIGTERM (raised as KeyboardInterrupt): the whole group goes too.
            if popen is None:  # inside Popen, the child maybe started: find its group
                _kill_unknown_children()
                raise
            _kill_group(popen.pid)
            popen.wait()
            entry.end(_read(out), _read(err), f"interrupted ({type(exc).__name__})", None)
            raise
        finally:
            if popen is not None:
                with _lock:
                    _unprotected.discard(popen.pid)
                    _known.discard(popen.pid)
        stdout, stderr = _read(out), _read(err)
    entry.end(stdout, stderr, why or _exit_text(code), time.monotonic() - start)
    if code is None:
        raise CommandError(cmd, None, stdout, stderr, why=why)
    if check and code != 0:
        raise CommandError(cmd, code, stdout, stderr)
    return CmdResult(code, stdout, stderr)
