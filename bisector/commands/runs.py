"""`bisector runs [--remove DIR | --remove-finished]`: list a repository's runs, remove old ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from bisector.backends.resources import ResourceRecord
from bisector.bisection.layout import RunLayout
from bisector.commands.runs_dirs import check_run_dir, run_dirs
from bisector.commands.status import FINISHED, describe, lock_held, run_state
from bisector.errors import BisectorError
from bisector.exitcodes import RunsExit
from bisector.gitrepo import GitRepo
from bisector.search.journal import Journal, read_journal


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _live(run_dir: Path, repo: GitRepo) -> bool:
    return lock_held(RunLayout(run_dir).lock) or (
        lock_held(repo.common_dir / "bisector.lock") and run_dir == run_dirs(repo)[-1]
    )


def _left_up(run_dir: Path) -> bool:
    """Whether something the run launched may still be up: its journal and resource
    record are what `bisector cleanup` tears that down from."""
    layout = RunLayout(run_dir)
    left_up = Journal(layout.journal, layout.root / ".no-cache", "").unfinished()
    return bool(left_up) or bool(ResourceRecord(run_dir).load())


def _finished_and_down(run_dir: Path) -> bool:
    """Listed as finished (not stopped, failed, interrupted, nor waiting for a mark) and
    nothing of it left up."""
    records = read_journal(RunLayout(run_dir).journal)
    return run_state(records) == FINISHED and not _left_up(run_dir)


def _remove(run_dir: Path, repo: GitRepo) -> None:
    check_run_dir(run_dir)
    if _live(run_dir, repo):
        raise BisectorError(f"{run_dir} belongs to a running bisection; stop it first")
    if _left_up(run_dir):
        raise BisectorError(
            f"{run_dir} may have a cluster left up (a teardown failed, or the run was "
            f"killed); tear it down first: bisector cleanup --run-dir {run_dir}"
        )
    repo.remove_worktrees_under(run_dir)  # by path: no stale entries in `git worktree list`
    shutil.rmtree(run_dir)
    typer.echo(f"removed {run_dir}")


def runs(repo: Path, *, remove: Path | None, remove_finished: bool) -> int:
    git_repo = GitRepo(repo)
    if remove is not None:
        _remove(remove, git_repo)
        return RunsExit.OK
    found = run_dirs(git_repo)
    if remove_finished:
        for run_dir in found:
            if _finished_and_down(run_dir) and not _live(run_dir, git_repo):
                _remove(run_dir, git_repo)
        return RunsExit.OK
    if not found:
        typer.echo("no bisector runs in this repository")
        return RunsExit.OK
    for run_dir in found:
        lines = describe(run_dir, running=_live(run_dir, git_repo))
        lines.insert(1, f"  size: {_size(run_dir) / 1e6:.1f} MB")
        for line in lines:
            typer.echo(line)
    return RunsExit.OK
