"""`bisector mark COMMIT good|bad|skip`: a person's verdict, used by the run as if measured.

A commit a person knows is broken (or known good) need not cost a cluster: the verdict
is appended to the run's journal (`mark` record) and the run, resumed or still going,
takes it instead of measuring that commit. The report lists every mark.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bisector.commands.runs_dirs import pick_run
from bisector.errors import BisectorError
from bisector.exitcodes import MarkExit
from bisector.gitrepo import GitRepo, RepoGiven
from bisector.measure.journal import Journal, Mark, Start, read_journal

VERDICTS = ("good", "bad", "skip")


def mark(commit: str, verdict: str, *, note: str, repo: Path | None, run_dir: Path | None) -> int:
    if verdict not in VERDICTS:
        raise BisectorError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    git_repo = GitRepo(repo or Path(), given=RepoGiven.flag(repo))
    full = git_repo.resolve(commit)
    target = pick_run(git_repo, run_dir)
    start = next((r for r in read_journal(target / "journal.jsonl") if isinstance(r, Start)), None)
    if start is not None and start.good and start.bad:
        inside = git_repo.is_ancestor(start.good, full) and git_repo.is_ancestor(full, start.bad)
        if not inside or full == start.good:
            raise BisectorError(
                f"{full[:12]} is not inside the run's range {start.good[:12]}..{start.bad[:12]}; "
                "pass a commit of that range, or another --run-dir"
            )
    journal = Journal(target / "journal.jsonl", target / ".no-cache", "")
    journal.write(Mark(full, verdict, note))
    typer.echo(f"marked {full[:12]} {verdict} in {target}")
    typer.echo("the run takes it instead of measuring that commit (resume it with its command)")
    return MarkExit.OK
