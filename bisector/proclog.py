"""Command logs: every external command's line, output, exit and duration, kept in a file.

`proc.run(..., log=path)` appends one block per command to `path`, so a retried
command shows as several blocks and a reader sees what each attempt printed:

    ===== 2017-06-02T05:51:10Z $ cd /wt && bash -c 'make quick-release'
    <stdout>
    ----- stderr
    <stderr>
    ===== exited with code 2 after 12.3s

The header is written before the command starts, so a command that hangs (or a
run killed by kill -9) still leaves its command line behind. Stdout and stderr go
to separate files while the command runs (callers parse stdout), so the block
holds stdout, then stderr, not their interleaving in time. Writing a log never
fails a command: an unwritable log file is ignored.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HEADER = "===== "
STAMP = "%Y-%m-%dT%H:%M:%SZ"  # when a command started, in its header line
STDERR = "----- stderr"


@dataclass(frozen=True)
class Entry:
    """One command's block in a log; `end` completes it (no-op without a log)."""

    path: Path | None

    def end(self, stdout: str, stderr: str, outcome: str, duration_s: float | None) -> None:
        if self.path is None:
            return
        parts = [_with_newline(stdout)]
        if stderr:
            parts += [STDERR + "\n", _with_newline(stderr)]
        took = f" after {duration_s:.1f}s" if duration_s is not None else ""
        parts.append(f"{HEADER}{outcome}{took}\n\n")
        _append(self.path, "".join(parts))


def started_at(header: str) -> float | None:
    """Epoch seconds a header line `begin` wrote says its command started; None for any
    other line (an outcome line, or a header torn by a crash)."""
    if not header.startswith(HEADER):
        return None
    stamp = header[len(HEADER) :].split(" ", 1)[0]
    try:
        return datetime.strptime(stamp, STAMP).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def begin(path: Path | None, cmd: Sequence[str], cwd: Path | str | None) -> Entry:
    """Write the command's header line to `path` (None: no log) and return its entry."""
    if path is not None:
        when = datetime.now(UTC).strftime(STAMP)
        where = f"cd {shlex.quote(str(cwd))} && " if cwd is not None else ""
        _append(path, f"{HEADER}{when} $ {where}{shlex.join(cmd)}\n")
    return Entry(path)


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _append(path: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
