"""A run directory is used by one process and owned by one clone (issue 12 item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bisector.errors import BisectorError
from bisector.gitrepo import GitRepo
from bisector.locking import claim_run_dir, lock_run_dir, own_run_dir
from tests.helpers.repo import build_repo

ROOT = Path(__file__).resolve().parents[1]


def _clones(tmp_path: Path) -> tuple[GitRepo, GitRepo, GitRepo]:
    """Two clones of one history, and a worktree of the first (same repository)."""
    build_repo(tmp_path / "a", [1, 2, 3])
    subprocess.run(
        ["git", "clone", "-q", str(tmp_path / "a"), str(tmp_path / "b")],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path / "a"),
            "worktree",
            "add",
            "-q",
            "--detach",
            str(tmp_path / "w"),
        ],
        check=True,
        capture_output=True,
    )
    return GitRepo(tmp_path / "a"), GitRepo(tmp_path / "b"), GitRepo(tmp_path / "w")


def test_a_second_clone_is_refused_a_worktree_of_the_first_is_not(tmp_path: Path) -> None:
    first, second, worktree = _clones(tmp_path)
    run_dir = tmp_path / "runs" / "shared"
    claim_run_dir(run_dir, first.common_dir)
    claim_run_dir(run_dir, first.common_dir)  # again: fine
    claim_run_dir(run_dir, worktree.common_dir)  # another worktree of the same repository
    with pytest.raises(BisectorError) as info:
        claim_run_dir(run_dir, second.common_dir)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"run directory {run_dir} belongs to another clone")
    assert str(first.common_dir.resolve()) in message
    assert message.endswith("pass another --run-dir for this clone")


def test_an_unreadable_owner_record_is_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "owner.json").write_text("[" * 100_000)
    with pytest.raises(BisectorError, match="does not say which repository owns"):
        claim_run_dir(run_dir, tmp_path / ".git")


_HOLDER = """
import sys, time
from pathlib import Path
from bisector.locking import lock_run_dir
with lock_run_dir(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_two_processes_never_share_a_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(BisectorError) as info, lock_run_dir(run_dir):
            pass
        assert str(info.value) == (
            f"run directory {run_dir} is in use by another bisector (pid {holder.pid}); "
            "wait for it to finish or pass another --run-dir"
        )
        holder.kill()  # kill -9: the kernel drops the lock
        holder.wait()
        with lock_run_dir(run_dir):
            pass
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_own_run_dir_locks_and_claims(tmp_path: Path) -> None:
    first, second, _ = _clones(tmp_path)
    run_dir = tmp_path / "run"
    with (
        own_run_dir(run_dir, first.common_dir),
        pytest.raises(BisectorError, match="in use by another bisector"),
        lock_run_dir(run_dir),
    ):
        pass
    with (
        pytest.raises(BisectorError, match="belongs to another clone"),
        own_run_dir(run_dir, second.common_dir),
    ):
        pass
    (tmp_path / "file").write_text("")
    with (
        pytest.raises(BisectorError, match="cannot create run directory"),
        lock_run_dir(tmp_path / "file" / "run"),
    ):
        pass
