"""The processes of a `procs` cluster seen from /proc: the CPU seconds and peak RSS they
used over the warmup, and, for one that is gone, how it ended and what its log says went
wrong (a skip's reason names that, not a stack trace's tail)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.procs.cluster import exit_file
from bisector.collected import ProcessUsage

_CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    cpu_s: float
    at: float  # epoch seconds


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of `pid` so far; None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime (fields 14, 15)


def peak_rss_bytes(pid: int) -> int:
    """VmHWM: the largest resident set the process has had (0 when unreadable)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def usage(name: str, pids: Sequence[int], before: dict[int, Sample], now: float) -> ProcessUsage:
    """CPU seconds of `pids` (summed) since `before`, the largest peak RSS among them."""
    cpu = 0.0
    start = now
    for pid in pids:
        then = before.get(pid)
        current = cpu_seconds(pid)
        if then is None or current is None:
            continue
        cpu += max(0.0, current - then.cpu_s)
        start = min(start, then.at)
    peak = max((peak_rss_bytes(p) for p in pids), default=0)
    return ProcessUsage(name, round(cpu, 3), peak, start, now)


def sample(pids: Sequence[int], at: float) -> dict[int, Sample]:
    taken = {}
    for pid in pids:
        cpu = cpu_seconds(pid)
        if cpu is not None:
            taken[pid] = Sample(cpu, at)
    return taken


def how_it_ended(log: Path, wait_s: float = 2.0) -> str:
    """`exit code N` or `killed by SIGNAME`, from the exit file its waiter writes (given
    `wait_s` to appear: the waiter writes it just after the process is reaped)."""
    path = exit_file(log)
    deadline = time.monotonic() + wait_s
    while True:
        with contextlib.suppress(OSError):
            text = path.read_text().strip()
            if text.isdigit():
                return describe_status(int(text))
        if time.monotonic() >= deadline:
            return "how it ended is not known: no exit status was recorded"
        time.sleep(0.05)


def describe_status(status: int) -> str:
    """bash's `wait` status: 128+N is signal N; glog's Fatal exits 255, no signal."""
    if status > 128:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(status - 128).name}"
    return f"exit code {status}"


# What the system said, when it said so: the reason names it rather than its consequences.
_SYSTEM_SAID = (
    ("no space left", re.compile(r"no space left on device", re.I)),
    ("too many open files", re.compile(r"too many open files", re.I)),
)
# An error line in the logs these programs write: glog's E/F severities (kube-apiserver,
# kubemark: `E1201 12:00:00.000000 ...`), capnslog's C/E levels (etcd 3.x: `2017-06-01
# 12:00:00.000000 C | etcdserver: create wal error: ...`), zap's JSON levels (etcd 3.5),
# a Go panic or fatal error, and Python's (the load generator) traceback's last line.
_ERROR_LINE = re.compile(
    r"^[EF]\d{4} \d\d:\d\d:\d\d"
    r"|^\d{4}-\d\d-\d\d[ T][\d:.]+\S* [CE] \| "
    r'|"level":"(?:error|fatal|panic|dpanic)"'
    r"|^panic: |^fatal error: "
    r"|^[A-Za-z_.]*(?:Error|Exception): "
)
_SCAN_BYTES = 16 << 20  # how much of a log is searched for its first error line


def first_error(path: Path, chars: int = 300) -> str:
    """What a process's log says went wrong: the system's own words (`no space left`,
    `too many open files`) with the first line saying them, else its first error line,
    else its last line."""
    try:
        with path.open("rb") as handle:
            text = handle.read(_SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return f"no log at {path}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"{path.name} is empty"
    for said, pattern in _SYSTEM_SAID:
        for line in lines:
            if pattern.search(line):
                return f"{said}: {line}"[:chars]
    for line in lines:
        if _ERROR_LINE.search(line):
            return line[:chars]
    return f"no error line; the last: {lines[-1]}"[:chars]
