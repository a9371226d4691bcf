"""`bisector runs [--remove DIR | --remove-finished]`: list a repository's runs, remove old ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from bisector.bisection.layout import RunLayout
from bisector.commands.runs_dirs import check_run_dir, run_dirs
from bisector.commands.status import describe, lock_held
from bisector.errors import BisectorError
from bisector.exitcodes import RunsExit
from bisector.gitrepo import GitRepo
from bisector.search.journal import Done, read_journal


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _live(run_dir: Path, repo: GitRepo) -> bool:
    return lock_held(RunLayout(run_dir).lock) or (
        lock_held(repo.common_dir / "bisector.lock") and run_dir == run_dirs(repo)[-1]
    )


def _remove(run_dir: Path, repo: GitRepo) -> None:
    check_run_dir(run_dir)
    if _live(run_dir, repo):
        raise BisectorError(f"{run_dir} belongs to a running bisection; stop it first")
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
            if any(isinstance(r, Done) for r in read_journal(run_dir / "journal.jsonl")):
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
