"""Stopping one local cluster: every process carrying its tag, then its temporary files.

Each process the `procs` backend starts (etcd, the apiserver, the hollow nodes, the
load generator) gets BISECTOR_PROCS_CLUSTER=<tag> in its environment; children inherit
it. Stopping a cluster is: SIGTERM to every process whose environment carries the tag,
up to `grace` seconds for them to exit, SIGKILL to the rest, a last check that none is
left, then the cluster's temporary directory removed. The tag, not a list of pids, is
what is recorded, so a process started a moment before a crash is found as well, and a
pid the kernel reused for another program is never signalled. The process groups of the
tagged processes are signalled too: each daemon was started in a group of its own, and a
child that dropped the tag from its environment (a workload's `env -i ...`) is still in
its parent's group.

The same is the recorded teardown step (`python -m bisector.backends.procs.stop --tag T
--remove DIR`), which `bisector cleanup` replays after a crash; exit 0 when nothing of
the cluster is left, 1 otherwise (what is left is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TAG_ENV = "BISECTOR_PROCS_CLUSTER"
_POLL_S = 0.1


@dataclass(frozen=True)
class Found:
    pid: int
    name: str


def tagged(tag: str) -> list[Found]:
    """Live processes (zombies left out) whose environment says TAG_ENV=tag."""
    want = f"{TAG_ENV}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat[stat.rfind(")") + 2 :].split(" ", 1)[0]
        if state in ("Z", "X") or want not in environ.split(b"\0"):
            continue
        found.append(Found(int(entry.name), stat[stat.find("(") + 1 : stat.rfind(")")]))
    return found


def _signal(found: list[Found], signum: int) -> None:
    for p in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signum)


def _wait_gone(tag: str, seconds: float) -> list[Found]:
    deadline = time.monotonic() + seconds
    left = tagged(tag)
    while left and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        left = tagged(tag)
    return left


def _groups(found: list[Found]) -> set[int]:
    """The process groups of `found` that are the cluster's own: every live member is
    tagged or a descendant of a tagged process (a workload's child that dropped the tag,
    `env -i`). Never this process's own group (nor init's), and never a group holding
    anyone else: a tagged process inside a shell's or a test runner's group has only
    itself signalled (signalling the group would end the whole pytest run when `bisector
    cleanup` stops a process a test tagged in its own group)."""
    mine = os.getpgid(0)
    tagged_pids = {p.pid for p in found}
    parent: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 3 or fields[0] in ("Z", "X"):
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        members.setdefault(int(fields[2]), []).append(pid)

    def ours(pid: int) -> bool:
        seen: set[int] = set()
        while pid > 1 and pid not in seen:
            if pid in tagged_pids:
                return True
            seen.add(pid)
            pid = parent.get(pid, 0)
        return False

    groups = set()
    for p in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(p.pid)
            if group not in (mine, 0, 1) and all(ours(m) for m in members.get(group, [])):
                groups.add(group)
    return groups


def _signal_groups(groups: set[int], signum: int) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)


def stop_cluster(tag: str, remove: Sequence[Path] = (), grace_s: float = 10.0) -> list[str]:
    """Stop everything tagged `tag` (and their process groups), remove `remove`; returns
    what is still there (empty: all gone). Processes that ignore SIGTERM for `grace_s` are
    killed."""
    left = tagged(tag)
    groups = _groups(left)
    if left:
        _signal(left, signal.SIGTERM)
        _signal_groups(groups, signal.SIGTERM)
        _signal(left, signal.SIGCONT)  # a stopped process (SIGSTOP) acts on the TERM only then
        left = _wait_gone(tag, grace_s)
    for _ in range(3):  # a dying process may have forked meanwhile
        if not left:
            break
        groups |= _groups(left)
        _signal(left, signal.SIGKILL)
        left = _wait_gone(tag, 5.0)
    _signal_groups(groups, signal.SIGKILL)  # untagged members that ignored the TERM
    problems = [f"process {p.pid} ({p.name}) still running" for p in left]
    for directory in remove:
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            problems.append(f"{directory} could not be removed")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bisector.backends.procs.stop",
        description="Stop a procs-backend cluster: its tagged processes, then its files.",
    )
    parser.add_argument("--tag", required=True, help=f"the cluster's {TAG_ENV} value")
    parser.add_argument("--remove", action="append", default=[], help="a directory to delete")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds before SIGKILL")
    args = parser.parse_args(argv)
    problems = stop_cluster(args.tag, [Path(d) for d in args.remove], args.grace)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
