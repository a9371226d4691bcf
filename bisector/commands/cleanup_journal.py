"""Cleanup from the journal: evaluations begun and never confirmed torn down.

For backends that record no resources of their own (`local`: the user's commands),
the journal is the record: every `begin` without a later successful teardown may have
left something up. The backend is rebuilt from the run's own config (named in the
journal's `start` record) and its teardown runs in a fresh checkout of the commit,
with signals held until it ends; `cleaned` is journaled only after it succeeded.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bisector.backends.base import Candidate
from bisector.backends.registry import backend_info
from bisector.bisection.layout import RunLayout, measurement_cache
from bisector.bisection.start import backend_context
from bisector.config import Section, load_config
from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import GitRepo, RepoGiven
from bisector.measure.journal import Cleaned, Journal, Start, TeardownFailed, read_journal
from bisector.settings import RunSettings
from bisector.signals import held_during


def tear_down_from_journal(run_dir: Path) -> int:
    """Tear down what the journal shows left up; returns how many teardowns failed."""
    layout = RunLayout(run_dir.resolve())
    start = next((r for r in read_journal(layout.journal) if isinstance(r, Start)), None)
    if start is None or not start.backend or not backend_info(start.backend).journal_teardown:
        return 0
    # The run's repository, as its journal recorded it: its worktrees and lock live there.
    given = RepoGiven(
        f"the run's repository (its journal {layout.journal} names it) {start.repo or '.'}",
        "put that checkout back there to tear down from the journal, or stop what is left by hand",
    )
    repo = GitRepo(start.repo or ".", given=given)
    journal = Journal(layout.journal, measurement_cache(repo.common_dir), "")
    open_ = journal.unfinished()
    if not open_:
        typer.echo(f"nothing left up according to {layout.journal}")
        return 0
    config = load_config(start.config) if start.config else Section()
    settings = RunSettings.from_config(config, good=start.good, bad=start.bad, repo=repo.root)
    backend = backend_info(settings.backend).create(backend_context(settings, layout))
    failed = 0
    with repo.lock():
        for begun in open_:
            worktree = layout.slot_worktree(begun.slot)
            candidate = Candidate(begun.commit, worktree, Path(begun.eval_dir), begun.slot)
            typer.echo(f"tearing down {begun.commit[:12]} ({settings.backend}, slot {begun.slot})")
            try:
                repo.add_worktree(worktree, begun.commit)
                with held_during(f"the teardown of {begun.commit[:12]}"):
                    backend.teardown(candidate)
            except (InfraError, BisectorError) as exc:
                failed += 1
                reason = getattr(exc, "reason", str(exc))
                journal.write(TeardownFailed(begun.commit, begun.eval_dir, reason))
                typer.echo(f"  NOT torn down: {reason}")
                continue
            finally:
                repo.remove_worktree(worktree)
            journal.write(Cleaned(begun.eval_dir))
            typer.echo("  torn down")
    return failed
