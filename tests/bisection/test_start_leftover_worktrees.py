"""A run ends with none of its worktrees left registered, also those a killed session
of it left (kill -9 while builds ran ahead in worktrees/prefetch-N): before, a resumed
run that needed no build ahead removed only the worktrees it used itself, so the killed
session's checkouts stayed on disk and in `git worktree list` after a finished run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bisector.exitcodes import DemoExit, RunExit


def _bisector(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bisector", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _registered_under(repo: Path, directory: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        line.split(" ", 1)[1]
        for line in out.splitlines()
        if line.startswith("worktree ") and str(directory.resolve()) in line
    ]


@pytest.mark.slow
def test_a_resumed_run_removes_the_worktrees_a_killed_session_left(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    done = _bisector("demo", "--dir", str(demo), "--prs", "12")
    assert done.returncode == DemoExit.FOUND, done.stderr
    repo, run_dir = demo / "kubernetes", demo / "run"
    assert _registered_under(repo, run_dir) == []
    # What kill -9 leaves: a build ahead's worktree, registered, with its checkout.
    left = run_dir / "worktrees" / "prefetch-0"
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "--detach", str(left), "HEAD"],
        capture_output=True,
        check=True,
    )
    resume = next(
        line.split("as: ", 1)[1] for line in done.stdout.splitlines() if "as: bisector run" in line
    ).split()
    resumed = _bisector(*resume[1:])  # every evaluation is in the journal: none again
    assert resumed.returncode == RunExit.FOUND, resumed.stderr
    assert _registered_under(repo, run_dir) == []
    assert not left.exists()
