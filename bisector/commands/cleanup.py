"""`bisector cleanup [--run-dir DIR]`: tear down what a crashed run left behind.

Reads `<run_dir>/resources.json` (written by the gce and kind backends before
they create anything) and replays each resource's teardown steps, newest
first (a kubemark cluster before the base cluster that hosts it). A step whose
working directory is gone (the candidate's worktree was removed) makes the
resource use its fallback steps instead. Every step is best effort: one
failure does not stop the others. A resource whose steps all succeeded is
removed from the record; the rest stay, so cleanup can be run again.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from bisector import proc
from bisector.backends.resources import RECORD_NAME, Resource, ResourceRecord
from bisector.backends.steps import Step, run_step, tail
from bisector.bisection.layout import RunLayout
from bisector.commands.cleanup_journal import tear_down_from_journal
from bisector.errors import BisectorError
from bisector.exitcodes import CleanupExit

EXIT_LEFTOVERS = CleanupExit.LEFT_UP
# A delete of something already deleted is success for a cleanup.
_ALREADY_GONE = re.compile(r"was not found|notFound|not found|No such|does not exist", re.I)


def cleanup(run_dir: Path) -> int:
    if not run_dir.is_dir():
        raise BisectorError(f"run directory {run_dir} does not exist; pass the run's --run-dir")
    if not _is_run_dir(run_dir):
        # Saying "nothing recorded" and 0 here would read as "nothing left up" after a typo.
        raise BisectorError(
            f"{run_dir.resolve()} is not a bisector run directory (no {_RUN_FILES}); "
            "pass the run's --run-dir (see `bisector runs`)"
        )
    left = _replay_resources(run_dir) + tear_down_from_journal(run_dir)
    # What a killed run's commands left running that no teardown knows of (a daemon a
    # launch started with setsid): the next run would stop it; cleanup stops it too.
    for line in proc.stop_orphans(RunLayout(run_dir).processes):
        typer.echo(f"stopped {line}")
    if left:
        typer.echo(
            f"{left} teardown(s) did not succeed; fix the cause and run cleanup again", err=True
        )
        return EXIT_LEFTOVERS
    return 0


_RUN_FILES = "journal.jsonl, resources.json nor processes.jsonl"


def _is_run_dir(run_dir: Path) -> bool:
    """A run leaves its journal; a gce/kind backend records resources.json before it
    creates anything, and processes.jsonl tracks process groups: any of them is a run."""
    layout = RunLayout(run_dir)
    return any(p.is_file() for p in (layout.journal, layout.resources, layout.processes))


def _replay_resources(run_dir: Path) -> int:
    record = ResourceRecord(run_dir)
    resources = record.load()
    if not resources:
        typer.echo(f"nothing recorded in {run_dir / RECORD_NAME}")
        return 0
    left = 0
    for resource in reversed(resources):
        typer.echo(f"tearing down {resource.what} ({resource.id})")
        if _tear_down(resource):
            record.remove(resource.id)
            typer.echo(f"  removed {resource.what}")
        else:
            left += 1
            typer.echo(f"  NOT removed: {resource.what}; fix the cause and run cleanup again")
    if left:
        typer.echo(f"{left} resource(s) still recorded in {record.path}", err=True)
    return left


def _tear_down(resource: Resource) -> bool:
    steps = resource.teardown
    missing = [s.cwd for s in steps if s.cwd and not Path(s.cwd).is_dir()]
    if missing:
        if not resource.fallback:
            typer.echo(f"  {missing[0]} is gone and no fallback is recorded; delete by hand")
            return False
        typer.echo(f"  {missing[0]} is gone; using the recorded fallback commands")
        steps = resource.fallback
    ok = True
    for s in steps:
        ok = _run(s) and ok
    return ok


def _run(s: Step) -> bool:
    typer.echo(f"  $ {s.render()}")
    try:
        run_step(s)
    except proc.CommandError as exc:
        if exc.code is not None and _ALREADY_GONE.search(f"{exc.stderr}\n{exc.stdout}"):
            typer.echo("  already gone")
            return True
        typer.echo(f"  failed ({exc.why}): {tail(exc)}")
        return False
    return True
