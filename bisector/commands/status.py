"""`bisector status`: progress of the runs of a repository (or of one run directory)."""

from __future__ import annotations

import fcntl
import os
from collections import Counter
from pathlib import Path

import typer

from bisector.errors import BisectorError
from bisector.gitrepo import GitRepo
from bisector.search.journal import read_lines


def _lock_held(lock: Path) -> bool:
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def describe(run_dir: Path, *, running: bool = False) -> list[str]:
    records = list(read_lines(run_dir / "journal.jsonl"))
    start = next((r for r in records if r.get("type") == "start"), {})
    verdicts = Counter(r["verdict"] for r in records if r.get("type") == "verdict")
    measured = sum(r.get("type") == "measurement" for r in records)
    last = records[-1]["type"] if records else "nothing yet"
    state = {"done": "finished", "interrupted": "interrupted"}.get(last, "stopped (killed?)")
    if running and last != "done":
        state = "running"
    threshold = next((r for r in reversed(records) if r.get("type") == "threshold"), None)
    lines = [
        f"{run_dir}",
        f"  range {str(start.get('good', '?'))[:12]}..{str(start.get('bad', '?'))[:12]}: {state}",
        f"  measurements: {measured}; verdicts: "
        + (", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) or "none"),
    ]
    if threshold:
        lines.append(f"  threshold {threshold['value']:g} ({threshold['how']})")
    done = next((r for r in reversed(records) if r.get("type") == "done"), None)
    if done:
        lines.append(f"  culprit: {done.get('culprit') or 'none (inconclusive)'}")
    command = next((r["command"] for r in reversed(records) if r.get("command")), "")
    if command:
        verb = "command" if state in ("finished", "running") else "resume with"
        lines.append(f"  {verb}: {command}")
    return lines


def status(repo: Path, run_dir: Path | None) -> int:
    git_repo = GitRepo(repo)
    running = _lock_held(git_repo.common_dir / "bisector.lock")
    if run_dir is not None:
        if not (run_dir / "journal.jsonl").is_file():
            raise BisectorError(
                f"{run_dir} is not a bisector run directory (no journal.jsonl); pass the "
                "run's --run-dir, or leave --run-dir out to list the repository's runs"
            )
        dirs = [run_dir]
    else:
        runs = git_repo.common_dir / "bisector" / "runs"
        dirs = sorted(runs.iterdir(), key=lambda p: p.stat().st_mtime) if runs.is_dir() else []
    if not dirs:
        typer.echo("no bisector runs in this repository")
        return 0
    for directory in dirs:
        # The lock is per repository: only the most recently active run can be the live one.
        for line in describe(directory, running=running and directory == dirs[-1]):
            typer.echo(line)
    return 0
