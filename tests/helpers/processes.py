"""Real test processes: waiting for one to go, and killing what a test left running."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from bisector import orphans


def gone(pid: int, seconds: float = 10.0) -> bool:
    """The process exited within `seconds` (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if orphans.start_time(pid) is None:
            return True
        time.sleep(0.05)
    return False


def kill_recorded(pids: Path) -> None:
    """SIGKILL every still-running process whose pid a test wrote into a file in `pids`."""
    for pidfile in pids.iterdir():
        text = pidfile.read_text().strip()
        if text.isdigit() and orphans.start_time(int(text)) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(text), signal.SIGKILL)


def listed(pid_file: Path) -> list[int]:
    """The pids a test's commands appended to `pid_file`, one per line ([] if none)."""
    return [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []


def kill_listed(pid_file: Path) -> None:
    """SIGKILL every pid listed in `pid_file` (cleanup: those already gone are skipped)."""
    for pid in listed(pid_file):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
