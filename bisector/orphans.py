"""Processes a killed bisector left behind: recorded while it ran, stopped by the next run.

`bisector.proc.run` starts every command as the leader of its own process group
and puts BISECTOR_OWNER=<pid>:<start time> (of the bisector process) in its
environment, which every descendant inherits, even one that daemonises with
setsid and so leaves the group. `track_groups(path)` first appends the owner
itself to `path`, before any command starts; inside it each group started is
then appended too (one JSON line each, fsync'd) with the leader's start time.
The group can only be written once the command runs, and a kill -9 can fall
between the two (under load the command ran a whole script first): the owner's
line and the mark find that group anyway.

After kill -9 of a run nothing tore those processes down. `stop_orphans(path)`
(called by the next run on the same run directory, before anything builds)
SIGKILLs, for every recorded owner that is no longer alive:
* each recorded group whose leader still has the recorded start time (a pid the
  kernel reused for an unrelated process has another start time), or whose
  leader is gone but whose members carry the dead owner's mark;
* every group no record names that a process with the dead owner's mark leads
  (the command started just before the kill, whose group was not written yet;
  members that dropped the mark, as sudo does, go with it);
* every other process that carries the dead owner's mark (escaped daemons).
A live owner's processes are never touched. Start times are the kernel's
(/proc/PID/stat field 22, clock ticks since boot), so the pair pid:start names
one process for the life of the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

OWNER_ENV = "BISECTOR_OWNER"
_PASSES = 3  # re-scan after killing: a dying script may have forked meanwhile

_lock = threading.Lock()
_trackers: list[Path] = []
_owner: tuple[int, str] | None = None


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    start: int
    owner: str | None  # BISECTOR_OWNER in its environment
    name: str


def _stat(pid: int) -> tuple[str, int, int, int, str] | None:
    """(state, ppid, pgid, start time, comm) from /proc/PID/stat; None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.find("(") + 1 : text.rfind(")")]
    fields = text[text.rfind(")") + 2 :].split()
    # fields[0] is field 3 (state): ppid is field 4, pgrp field 5, starttime field 22.
    return fields[0], int(fields[1]), int(fields[2]), int(fields[19]), name


def children_stats() -> list[tuple[int, int, int]]:
    """(pid, ppid, pgid) of every live process (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[0] not in "ZX":
            found.append((int(entry.name), stat[1], stat[2]))
    return found


def process_state(pid: int) -> str | None:
    """The process's state letter (R, S, T stopped, Z, ...; proc(5)); None if gone."""
    stat = _stat(pid)
    return None if stat is None else stat[0]


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks after boot; None when it is gone or a zombie."""
    stat = _stat(pid)
    return None if stat is None or stat[0] in "ZX" else stat[3]


def owner_tag() -> str:
    """`pid:start` of this process: what BISECTOR_OWNER says in every child it starts."""
    global _owner  # noqa: PLW0603 - computed once per process (a fork has a new pid)
    pid = os.getpid()
    if _owner is None or _owner[0] != pid:
        _owner = (pid, f"{pid}:{start_time(pid)}")
    return _owner[1]


def is_alive(tag: str) -> bool:
    """Whether the process `pid:start` still runs (a reused pid has another start time)."""
    pid, _, start = tag.partition(":")
    if not pid.isdigit():
        return False
    now = start_time(int(pid))
    return now is not None and str(now) == start


@contextlib.contextmanager
def track_groups(path: Path) -> Iterator[None]:
    """Record every process group `proc.run` starts, from any thread, in `path`.

    Process-wide while the block runs (nested blocks write to the innermost file).
    This process is recorded first, before any command can start: a kill -9 between
    a command's start and its group's record leaves its processes findable by their
    mark. Each record is one JSON line, flushed and fsync'd before the command is
    waited for, so it survives a kill -9 of this process right after.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock:
        _append(path, {"owner": owner_tag()})
        _trackers.append(path)
    try:
        yield
    finally:
        with _lock:
            _trackers.remove(path)


def record_group(pgid: int, cmd: Sequence[str]) -> None:
    """Append the group `pgid` (just started by `proc.run`) to the tracking file, if any."""
    with _lock:
        if not _trackers:
            return
        record = {
            "pgid": pgid,
            "start": start_time(pgid),
            "owner": owner_tag(),
            "cmd": shlex.join(cmd)[:200],
        }
        _append(_trackers[-1], record)


def _append(path: Path, record: Mapping[str, object]) -> None:
    line = json.dumps(record)
    with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _records(path: Path) -> list[dict[str, object]]:
    """Every well-formed line: an owner's (`owner` only) or a group's (`pgid` too)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill -9 that made this necessary
        if (
            isinstance(rec, dict)
            and isinstance(rec.get("owner"), str)
            and isinstance(rec.get("pgid", 0), int)
        ):
            records.append(rec)
    return records


def _environ_owner(pid: int, name: str = OWNER_ENV) -> str | None:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = name.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return None


def stop_marked(name: str, value: str) -> list[str]:
    """SIGKILL this bisector's own processes whose environment says `name`=`value` (a
    launch id): after a launch's teardown, a daemon its commands started with setsid (a
    workload's helper, an apiserver the teardown missed) ran on through every later
    candidate's measurement, and past the run's end. Returns one line per process."""
    if not value:
        return []
    mine, spared = owner_tag(), _ancestors()
    stopped: list[str] = []
    killed: set[int] = set()
    for _ in range(_PASSES):  # a dying script may have forked meanwhile
        found = [
            p
            for p in _processes()
            if p.owner == mine
            and p.pid not in spared | killed
            and _environ_owner(p.pid, name) == value
        ]
        for p in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, signal.SIGKILL)
            killed.add(p.pid)
            stopped.append(f"process {p.pid} ({p.name})")
        if not found:
            break
    return stopped


def _processes() -> list[Proc]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = _stat(pid)
        if stat is None or stat[0] in "ZX":
            continue
        found.append(Proc(pid, stat[1], stat[2], stat[3], _environ_owner(pid), stat[4]))
    return found


def _ancestors() -> set[int]:
    """This process and its ancestors: never stopped, whatever their environment says."""
    mine, pid = set(), os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        stat = _stat(pid)
        pid = stat[1] if stat else 0
    return mine


def _one_pass(records: list[dict[str, object]], dead: set[str], killed: set[int]) -> list[str]:
    """Kill what is still alive; `killed` (pids signalled so far) grows: nothing is said twice."""
    procs = [p for p in _processes() if p.pid not in killed]
    by_pid = {p.pid: p for p in procs}
    spared = _ancestors()
    stopped: list[str] = []
    for rec in records:
        if "pgid" not in rec:
            continue  # an owner's line
        owner, pgid, start = str(rec["owner"]), int(str(rec["pgid"])), rec.get("start")
        if owner not in dead:
            continue
        leader = by_pid.get(pgid)
        members = [p for p in procs if p.pgid == pgid and p.pid not in spared]
        if leader is not None:
            if leader.start != start:
                continue  # the pid was reused by an unrelated process
        elif not any(p.owner == owner for p in members):
            continue  # no member carries the mark: not provably ours
        if members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            killed.update(p.pid for p in members)
            stopped.append(
                f"process group {pgid} (`{rec.get('cmd', '?')}`, {len(members)} process(es)) "
                f"left by bisector {owner.partition(':')[0]}"
            )
    for p in procs:
        # Groups no record names, led by a marked process: the command was started but
        # the kill came before its record, or a daemon's own group (setsid).
        if p.owner not in dead or p.pid != p.pgid or p.pid in killed | spared:
            continue
        members = [q for q in procs if q.pgid == p.pgid and q.pid not in killed]
        if len(members) < 2 or any(q.pid in spared for q in members):
            continue  # one process (said as one below), or a group holding this one
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pgid, signal.SIGKILL)
        killed.update(q.pid for q in members)
        stopped.append(
            f"process group {p.pgid} (`{p.name}`, {len(members)} process(es)) "
            f"left by bisector {p.owner.partition(':')[0]}"
        )
    for p in procs:
        if p.owner in dead and p.pid not in killed and p.pid not in spared:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, signal.SIGKILL)
            killed.add(p.pid)
            stopped.append(f"process {p.pid} ({p.name}) left by bisector {p.owner.split(':')[0]}")
    return stopped


def stop_orphans(path: Path) -> list[str]:
    """SIGKILL what bisector processes recorded in `path`, now dead, left running.

    Returns one line per group or process stopped (empty when nothing was left).
    Records of dead owners are then dropped from `path`; a live owner's processes
    and records are left alone. Never raises for a missing or garbled file.
    """
    records = _records(path)
    owners = {str(r["owner"]) for r in records}
    dead = {o for o in owners if o != owner_tag() and not is_alive(o)}
    if not dead:
        return []
    stopped: list[str] = []
    killed: set[int] = set()
    for _ in range(_PASSES):
        found = _one_pass(records, dead, killed)
        if not found:
            break
        stopped += found
    keep = [r for r in records if str(r["owner"]) not in dead]
    with contextlib.suppress(OSError):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in keep), encoding="utf-8")
        tmp.replace(path)
    return stopped
