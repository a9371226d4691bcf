"""The one place the tool starts external programs.

Backends call only `run`; tests replace only `run`. Every call has a timeout,
runs in its own process group (so a timeout or Ctrl-C kills the whole tree a
script started, not just the shell), and failures raise `CommandError` carrying
the command and what it printed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 3600.0
# Process groups of commands that must finish even when the run is interrupted
# (teardowns): the interrupt handler's kill of running commands spares them.
PROTECTED_GROUPS: set[int] = set()
_local = threading.local()
_TAIL_CHARS = 2000


@dataclass(frozen=True)
class CmdResult:
    code: int
    stdout: str
    stderr: str


class CommandError(Exception):
    """An external command failed, timed out, or could not be started."""

    def __init__(
        self, cmd: Sequence[str], code: int | None, stdout: str, stderr: str, why: str = ""
    ) -> None:
        self.cmd = list(cmd)
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.why = why or f"exited with code {code}"
        tail = (stderr or stdout).strip()[-_TAIL_CHARS:]
        msg = f"`{shlex.join(self.cmd)}` {self.why}"
        super().__init__(f"{msg}: {tail}" if tail else msg)

    @property
    def timed_out(self) -> bool:
        return self.why.startswith("timed out")


def _kill_group(popen: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(popen.pid, signal.SIGKILL)


@contextlib.contextmanager
def protected() -> Iterator[None]:
    """Commands this thread starts inside the block are spared by interrupt kills."""
    before = getattr(_local, "protected", False)
    _local.protected = True
    try:
        yield
    finally:
        _local.protected = before


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    check: bool = True,
    stdin: str | None = None,
) -> CmdResult:
    """Run `cmd` (an argv list; use ["bash", "-c", script] for shell text).

    `env` is added to the current environment, not a replacement for it.
    Raises CommandError when the program is missing, times out, or (with
    `check`) exits non-zero.
    """
    full_env = {**os.environ, **env} if env else None
    try:
        popen = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=full_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        raise CommandError(cmd, None, "", str(exc), why=f"could not start: {exc}") from exc
    guarded = getattr(_local, "protected", False)
    if guarded:
        PROTECTED_GROUPS.add(popen.pid)
    try:
        out, err = popen.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(popen)
        out, err = popen.communicate()
        raise CommandError(cmd, None, out, err, why=f"timed out after {timeout:g}s") from None
    except BaseException:
        # Ctrl-C or SIGTERM while waiting: the child's whole group goes too.
        _kill_group(popen)
        popen.wait()
        raise
    finally:
        PROTECTED_GROUPS.discard(popen.pid)
    if check and popen.returncode != 0:
        raise CommandError(cmd, popen.returncode, out, err)
    return CmdResult(popen.returncode, out, err)
