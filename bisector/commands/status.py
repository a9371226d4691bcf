"""`bisector status`: progress of the runs of a repository (or of one run directory)."""

from __future__ import annotations

import fcntl
import os
from collections import Counter
from pathlib import Path

import typer

from bisector.bisection.layout import RunLayout
from bisector.commands.runs_dirs import check_run_dir, run_dirs
from bisector.gitrepo import GitRepo
from bisector.search.journal import (
    Done,
    EarlyGoodWithdrawn,
    Failed,
    Interrupted,
    Mark,
    Measured,
    Record,
    Resume,
    Start,
    TeardownFailed,
    ThresholdSet,
    Verdict,
    read_journal,
)

FINISHED = "finished"
# Records a run writes when it starts and ends; anything else (a `mark`, the `cleaned`
# records of `bisector cleanup`) may be appended later by other commands.
_LIFECYCLE = (Start, Resume, Done, Interrupted, Failed)


def lock_held(lock: Path) -> bool:
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


def run_state(records: list[Record]) -> str:
    """How the run's last session ended, from its own start and end records.

    "finished", "interrupted", "failed: WHY" (an error stopped it), or "stopped
    (killed?)" (started and never said how it ended); a finished run a person marked
    a commit of since says so: rerunning it takes the mark.
    """
    at = max((i for i, r in enumerate(records) if isinstance(r, _LIFECYCLE)), default=-1)
    last = records[at] if at >= 0 else None
    if isinstance(last, Done):
        if any(isinstance(r, Mark) for r in records[at:]):
            return f"{FINISHED}; a commit was marked since: rerun its command to use the mark"
        return FINISHED
    if isinstance(last, Interrupted):
        return "interrupted"
    if isinstance(last, Failed):
        return f"failed: {last.reason}"
    return "stopped (killed?)"


def describe(run_dir: Path, *, running: bool = False) -> list[str]:
    layout = RunLayout(run_dir)
    records = read_journal(layout.journal)
    start = next((r for r in records if isinstance(r, Start)), Start("?", "?"))
    # What git bisect was last told about each commit (a rerun replays, never adds).
    latest = {r.commit: r.verdict for r in records if isinstance(r, Verdict)}
    verdicts = Counter(latest.values())
    measured = sum(isinstance(r, Measured) for r in records)
    state = run_state(records)
    if running and state != FINISHED:
        state = "running"
    threshold = next((r for r in reversed(records) if isinstance(r, ThresholdSet)), None)
    lines = [
        f"{run_dir}",
        f"  range {start.good[:12]}..{start.bad[:12]}: {state}",
        f"  measurements: {measured}; verdicts: "
        + (", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) or "none"),
    ]
    if threshold:
        lines.append(f"  threshold {threshold.value:g} ({threshold.how})")
    withdrawn = next((r for r in records if isinstance(r, EarlyGoodWithdrawn)), None)
    if withdrawn:
        # Verdicts above count both searches: the first one's early goods decided nothing.
        lines.append(f"  early good verdicts withdrawn: {withdrawn.why}; searched again")
    failed = [r for r in records if isinstance(r, TeardownFailed)]
    if failed:
        lines.append(
            f"  TEARDOWN FAILED {len(failed)} time(s): bisector cleanup --run-dir {run_dir}"
        )
    done = next((r for r in reversed(records) if isinstance(r, Done)), None)
    if done:
        lines.append(f"  culprit: {done.culprit or 'none (inconclusive)'}")
    command = next(
        (r.command for r in reversed(records) if isinstance(r, (Start, Resume)) and r.command),
        "",
    )
    if command:
        verb = "command" if state in (FINISHED, "running") else "resume with"
        lines.append(f"  {verb}: {command}")
    return lines


def status(repo: Path, run_dir: Path | None) -> int:
    git_repo = GitRepo(repo)
    running = lock_held(git_repo.common_dir / "bisector.lock")
    dirs = [check_run_dir(run_dir)] if run_dir is not None else run_dirs(git_repo)
    if not dirs:
        typer.echo("no bisector runs in this repository")
        return 0
    for directory in dirs:
        # The lock is per repository: only the most recently active run can be the live one.
        live = lock_held(RunLayout(directory).lock) or (running and directory == dirs[-1])
        for line in describe(directory, running=live):
            typer.echo(line)
    return 0
