"""Nothing the user owns is touched: their worktrees, hooks, bisect, index, refs.

bisector works in the user's repository (worktrees of its own, a `git bisect` of its
own in one of them). Every git command it runs there must leave alone whatever is the
user's (git 2.39.5 here):

- `git worktree prune` deleted the metadata of every linked worktree whose directory
  was missing at that moment, the user's too (a worktree on a drive unplugged during
  the run): afterwards that directory was no longer a git checkout. bisector removes
  its own worktrees by path and never prunes.
- Checkouts in the tool's worktrees ran the user's hooks (`post-checkout` runs for
  `git worktree add` and `git checkout` in any worktree of the repository, from the
  common `.git/hooks`); a hook that fails makes `git checkout` fail (its exit status
  becomes checkout's), which stopped the whole run.
- A `git bisect` the user has in progress, their HEAD, index, refs and stashes stay
  exactly as they were, also after an interrupted run and `bisector cleanup`.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import CleanupExit, RunExit
from tests.helpers.checkout import snapshot
from tests.helpers.faults import FaultDriver, bisector_argv, run_args, wait_for
from tests.helpers.repo import BuiltRepo, build_repo

VALUES = [2, 2, 40, 40]
CULPRIT = 2


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _user_state(built: BuiltRepo, tmp_path: Path) -> None:
    """A user mid-way through their own work: a linked worktree, a stash, a bisect."""
    path = built.path
    _git(path, "worktree", "add", "-q", "--detach", str(tmp_path / "user-wt"), built.mainline[1])
    (path / "notes.txt").write_text("mine\n")
    _git(path, "add", "notes.txt")
    _git(path, "stash", "-q")
    _git(path, "bisect", "start", built.mainline[-1], built.mainline[0])


@pytest.mark.slow
def test_a_run_never_prunes_the_users_worktree_whose_drive_is_unplugged(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    _user_state(built, tmp_path)
    user_wt = tmp_path / "user-wt"
    (user_wt / "work-in-progress.txt").write_text("not committed yet\n")
    unplugged = tmp_path / "drive-unplugged"
    user_wt.rename(unplugged)  # the drive is gone for the length of the run
    before = snapshot(built.path)
    bisect_log = _git(built.path, "bisect", "log")

    run_dir = tmp_path / "run"
    argv = [*run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)]
    done = subprocess.run([*argv, "--parallel", "2"], capture_output=True, text=True, check=False)
    assert done.returncode == RunExit.FOUND, done.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in done.stdout
    cleanup = subprocess.run(
        bisector_argv("cleanup", "--run-dir", str(run_dir)), capture_output=True, check=False
    )
    assert cleanup.returncode == CleanupExit.CLEAN

    assert snapshot(built.path) == before  # the worktree list still holds the user's
    assert _git(built.path, "bisect", "log") == bisect_log
    unplugged.rename(user_wt)  # the drive is back: still a checkout of the repository
    assert _git(user_wt, "rev-parse", "HEAD").strip() == built.mainline[1]
    assert "work-in-progress.txt" in _git(user_wt, "status", "--porcelain", "--untracked=all")


@pytest.mark.slow
def test_the_users_hooks_never_run_for_the_tools_checkouts(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    ran = tmp_path / "hook-ran.txt"
    hook = built.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f'#!/bin/sh\necho "$PWD" >> "{ran}"\nexit 1\n')  # a hook that fails
    hook.chmod(0o755)
    before = snapshot(built.path)
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, tmp_path / "run")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == RunExit.FOUND, done.stderr
    assert not ran.exists(), ran.read_text()
    assert snapshot(built.path) == before


@pytest.mark.slow
def test_an_interrupted_run_and_its_cleanup_leave_the_users_bisect_and_worktrees_alone(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    _user_state(built, tmp_path)
    shutil.move(tmp_path / "user-wt", tmp_path / "away")  # missing during the run again
    before = snapshot(built.path)
    driver.inject("hang-launch", "call:1")
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: driver.entered("launch"), what="the launch")
    process.send_signal(signal.SIGKILL)  # worst case: nothing of the run's own cleanup ran
    process.communicate()
    driver.kill_leftovers()
    cleanup = subprocess.run(
        bisector_argv("cleanup", "--run-dir", str(run_dir)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert cleanup.returncode == CleanupExit.CLEAN, cleanup.stdout + cleanup.stderr
    assert driver.up() == []
    after = snapshot(built.path)
    # The killed run's own worktrees are the only difference cleanup may leave; the
    # user's entries (the missing one included) are all there.
    assert {k: v for k, v in after.items() if k != "worktrees"} == {
        k: v for k, v in before.items() if k != "worktrees"
    }
    assert str(tmp_path / "user-wt") in after["worktrees"]
    # Removing the run removes its worktrees by path: the list is the user's alone again.
    removed = subprocess.run(
        bisector_argv("runs", "--repo", str(built.path), "--remove", str(run_dir)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert removed.returncode == 0, removed.stderr
    assert snapshot(built.path) == before
