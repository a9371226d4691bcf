"""`bisector demo`: bisect a synthetic June-2017 Kubernetes history on the built-in simulator.

It builds the demo history (bisector.sim.demo_repo), writes its config next to it
and runs the very bisection `bisector run --first-parent` runs (RunOptions from
the config file, then `run_bisection`), so what the demo shows is what the tool
does. The demo directory holds:

    kubernetes/   the synthetic history (a git repository)
    demo.toml     the config the bisection used
    run/          journal, each evaluation's log, report.json/.md/.html
    .bisector-demo  marks the directory as a demo's, so running the demo again replaces it
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import typer

from bisector.backends.registry import backend_info
from bisector.bisection.pipeline import run_bisection
from bisector.commands.run import build_settings
from bisector.cost import evaluation_s
from bisector.dirs import ensure_dir
from bisector.durations import parse_duration
from bisector.errors import BisectorError
from bisector.exitcodes import DemoExit
from bisector.report import summary_lines
from bisector.report.model import Report
from bisector.settings import RunFlags
from bisector.sim.demo_repo import (
    DEMO_DURATION,
    DEMO_NODES,
    DemoRepo,
    create_demo_repo,
    demo_config,
)
from bisector.ui.progress_lines import make_progress

DEFAULT_DIR = Path("bisector-demo")
MARKER = ".bisector-demo"
DEMO_PRS = 40  # PR merges in the synthetic history
MIN_PRS = 12  # fewer leave no room for the unbuildable stretch away from the culprit
# Past these the demo would not end on a laptop (each PR is commits to make and bisect,
# each node and simulated second is work for the simulator): a typo, said before anything.
MAX_PRS = 1000
MAX_NODES = 100_000
MAX_DURATION_S = 3600.0
MAX_CULPRITS = 2  # the trigger index's commit, and an earlier, smaller regression


def prepare_dir(target: Path) -> Path:
    """An empty directory for the demo; an earlier demo's is replaced, anything else refused."""
    target = target.expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise BisectorError(f"{target} is a file; pass --dir with a new or empty directory")
    if target.is_dir() and any(target.iterdir()):
        if not (target / MARKER).is_file():
            raise BisectorError(
                f"{target} is not empty and holds no earlier demo; "
                "pass --dir with a new or empty directory"
            )
        shutil.rmtree(target)
    return ensure_dir(
        target,
        what="the demo directory",
        fix="pass --dir a new or empty directory bisector can write",
    )


def _check_inputs(nodes: int, duration: str, prs: int, culprits: int = 1) -> None:
    if not 1 <= culprits <= MAX_CULPRITS:
        raise BisectorError(f"--culprits must be 1 or {MAX_CULPRITS}, got {culprits}")
    if prs < MIN_PRS:
        raise BisectorError(f"--prs must be at least {MIN_PRS}, got {prs}")
    if prs > MAX_PRS:
        raise BisectorError(f"--prs must be at most {MAX_PRS}, got {prs}")
    if nodes < 10:
        raise BisectorError(f"--nodes must be at least 10 for the regression to show, got {nodes}")
    if nodes > MAX_NODES:
        raise BisectorError(f"--nodes must be at most {MAX_NODES} (kubemark's scale), got {nodes}")
    seconds = parse_duration(duration, what="--duration")
    if seconds < 30:
        raise BisectorError(f"--duration must be at least 30s of simulated time, got {duration}")
    if seconds > MAX_DURATION_S:
        raise BisectorError(f"--duration must be at most 1h of simulated time, got {duration}")


def demo(
    target: Path | None,
    *,
    nodes: int = DEMO_NODES,
    seed: int = 0,
    duration: str = DEMO_DURATION,
    prs: int = DEMO_PRS,
    culprits: int = 1,
    verbose: bool = False,
) -> int:
    """The demo; `culprits` 2 plants an earlier, smaller regression too (the first search
    finds it, its revert leaves the bad endpoint bad, the next search finds the other)."""
    _check_inputs(nodes, duration, prs, culprits)
    where = prepare_dir(target or DEFAULT_DIR)
    typer.echo(f"demo directory: {where}")
    demo_repo = create_demo_repo(
        where / "kubernetes", nodes=nodes, seed=seed, prs=prs, second_culprit=culprits == 2
    )
    planted = {"culprit": demo_repo.culprit, "seed": seed}
    if demo_repo.second_culprit is not None:
        planted["second_culprit"] = demo_repo.second_culprit
    (where / MARKER).write_text(json.dumps(planted) + "\n")
    config = where / "demo.toml"
    config.write_text(demo_config(demo_repo, duration), encoding="utf-8")
    run_dir = where / "run"
    command = shlex.join(
        ["bisector", "run", "--repo", str(demo_repo.path), "--config", str(config),
         "--run-dir", str(run_dir), "--good", demo_repo.good[:12], "--bad", demo_repo.bad[:12],
         "--first-parent"]
    )  # fmt: skip
    _describe_history(demo_repo, nodes, duration)
    typer.echo(f"bisecting with the sim backend, as: {command}")
    # The options `bisector run` builds from the printed command (flags over the file).
    settings = build_settings(
        good=demo_repo.good,
        bad=demo_repo.bad,
        repo=demo_repo.path,
        config=config,
        run_dir=run_dir,
        flags=RunFlags(first_parent=True),
        resume_command=command,
    )
    # The ETA uses the cost model's evaluation time, as --dry-run does.
    progress = make_progress(
        evaluation_s(
            model=backend_info(settings.backend).phases,
            warmup_s=settings.warmup_s,
            estimate_s=settings.evaluation_estimate_s,
        ),
        verbose=verbose,
    )
    try:
        report = run_bisection(settings, progress=progress)
    except KeyboardInterrupt:
        progress.stop()
        print(f"bisector: demo interrupted; resume with: {command}", file=sys.stderr)
        return DemoExit.INTERRUPTED
    return _print_evidence(report, demo_repo, run_dir)


def _describe_history(demo_repo: DemoRepo, nodes: int, duration: str) -> None:
    typer.echo(
        f"history: {demo_repo.merges} PR merges after good {demo_repo.good[:12]} up to bad "
        f"{demo_repo.bad[:12]}, {len(demo_repo.unbuildable)} commits that do not build"
    )
    if demo_repo.second_culprit is not None:
        typer.echo(
            f"two regressions planted: {demo_repo.second_culprit[:12]} (smaller, earlier) and "
            f"{demo_repo.culprit[:12]}"
        )
    typer.echo(f"each evaluation: {nodes} hollow nodes, {duration} of simulated cluster time")


def _print_evidence(report: Report, demo_repo: DemoRepo, run_dir: Path) -> int:
    typer.echo("")
    for line in summary_lines(report):
        typer.echo(line)
    culprit = report.culprit
    if culprit is None:
        return DemoExit.MISSED
    if not any(e.verdict == "skip" for e in report.evaluations):
        typer.echo(
            f"  skipped: none (the search never picked one of the {len(demo_repo.unbuildable)} "
            "commits that do not build)"
        )
    if demo_repo.second_culprit is not None:
        return _both_found(report, demo_repo)
    if culprit.commit != demo_repo.culprit:
        typer.echo(f"this is NOT the planted commit {demo_repo.culprit}")
        return DemoExit.MISSED
    typer.echo("this is the commit the demo planted (the second commit of its PR, not the merge)")
    return DemoExit.FOUND if culprit.confirmed else DemoExit.MISSED


def _both_found(report: Report, demo_repo: DemoRepo) -> int:
    """Both planted commits named, each confirmed."""
    planted = [demo_repo.second_culprit, demo_repo.culprit]
    found = [c.commit for c in report.culprits if c.confirmed]
    if found != planted:
        typer.echo(
            f"the demo planted {', '.join(str(c)[:12] for c in planted)}; the run confirmed "
            f"{', '.join(c[:12] for c in found) or 'none'}: NOT both"
        )
        return DemoExit.MISSED
    typer.echo("these are the two commits the demo planted, each confirmed")
    return DemoExit.FOUND
