"""`bisector runs [--remove DIR | --remove-finished | --prune] [--json]`: a repository's
runs with the disk they use; remove old ones, or keep only their reports."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import typer

from bisector.backends.resources import ResourceRecord
from bisector.bisection.layout import RunLayout
from bisector.commands.runs_dirs import check_run_dir, run_dirs
from bisector.commands.status import (
    FINISHED,
    RunStatus,
    disk_text,
    lock_held,
    run_state,
    run_status,
    status_lines,
)
from bisector.errors import BisectorError
from bisector.exitcodes import RunsExit
from bisector.gitrepo import GitRepo, RepoGiven
from bisector.measure.journal import Journal, Pruned, read_journal
from bisector.report import report_of, write_reports
from bisector.report.model import PrunedLogs, Report
from bisector.report.smoking_gun import drawn_log_dirs
from bisector.report.summary import prune_command
from bisector.runfiles import prune_logs, size_text


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


def _finished(run_dir: Path) -> bool:
    return run_state(read_journal(RunLayout(run_dir).journal)) == FINISHED


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


def _prune(repo: GitRepo, found: list[Path]) -> None:
    """Every finished run keeps its journal, reports, command logs and the logs its report's
    smoking gun draws; its other logs go, and its journal and reports say when."""
    freed = 0
    for run_dir in found:
        if _live(run_dir, repo) or not _finished(run_dir):
            continue  # a running or resumable run still needs its logs
        report = report_of(run_dir)
        keep = drawn_log_dirs(report) if report is not None else set()
        gone = prune_logs(run_dir, keep)
        if gone:
            _say_pruned(run_dir, report, Pruned(time.time(), gone, sorted(map(str, keep))))
            kept = ", the smoking gun's logs" if keep else ""
            typer.echo(f"pruned {run_dir}: {size_text(gone)} of logs dropped; reports{kept} kept")
        freed += gone
    typer.echo(f"freed {size_text(freed)}")


def _say_pruned(run_dir: Path, report: Report | None, record: Pruned) -> None:
    """Journal the prune (a resumed run's report says it) and say it in the reports now:
    their links to the dropped logs lead nowhere."""
    layout = RunLayout(run_dir)
    Journal(layout.journal, layout.root / ".no-cache", "").write(record)
    if report is not None:
        pruned = PrunedLogs(record.at, record.freed_bytes, list(record.kept))
        write_reports(replace(report, pruned=pruned), run_dir)


def runs(
    repo: Path | None,
    *,
    remove: Path | None,
    remove_finished: bool,
    prune: bool = False,
    as_json: bool = False,
) -> int:
    git_repo = GitRepo(repo or Path(), given=RepoGiven.flag(repo))
    if remove is not None:
        _remove(remove, git_repo)
        return RunsExit.OK
    found = run_dirs(git_repo)
    if remove_finished:
        for run_dir in found:
            if _finished_and_down(run_dir) and not _live(run_dir, git_repo):
                _remove(run_dir, git_repo)
        return RunsExit.OK
    if prune:
        _prune(git_repo, found)
        return RunsExit.OK
    listed: list[RunStatus] = [run_status(d, running=_live(d, git_repo)) for d in found]
    if as_json:
        typer.echo(json.dumps([run.to_json() for run in listed], indent=2))
        return RunsExit.OK
    if not listed:
        typer.echo("no bisector runs in this repository")
        return RunsExit.OK
    for run in listed:
        for line in status_lines(run):
            typer.echo(line)
    total = sum(run.disk_bytes for run in listed)
    logs = sum(run.logs_bytes for run in listed)
    how = prune_command(str(git_repo.root))  # as it works from here
    typer.echo(f"{len(listed)} run(s), disk: {disk_text(total, logs, prune=how)}")
    return RunsExit.OK
