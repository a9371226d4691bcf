"""`bisector demo`: bisect a synthetic June-2017 Kubernetes history on the built-in simulator.

It builds the demo history (bisector.demo_repo), writes its config next to it
and runs the very bisection `bisector run --first-parent` runs (RunOptions from
the config file, then `run_bisection`), so what the demo shows is what the tool
does. The demo directory holds:

    kubernetes/   the synthetic history (a git repository)
    demo.toml     the config the bisection used
    run/          journal, each evaluation's log, report.json/.md/.html
    .bisector-demo  marks the directory as a demo's, so running the demo again replaces it
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from bisector.commands.run import build_options
from bisector.demo_repo import DEMO_DURATION, DEMO_NODES, DemoRepo, create_demo_repo, demo_config
from bisector.dirs import ensure_dir
from bisector.durations import parse_duration
from bisector.errors import EXIT_INTERRUPTED, BisectorError
from bisector.search import run_bisection
from bisector.search.progress import make_progress
from bisector.search.report import Report

DEFAULT_DIR = Path("bisector-demo")
MARKER = ".bisector-demo"
DEMO_PRS = 40  # PR merges in the synthetic history
MIN_PRS = 12  # fewer leave no room for the unbuildable stretch away from the culprit
EXIT_FOUND = 0
EXIT_MISSED = 3  # the bisection did not name the planted commit


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


def _check_inputs(nodes: int, duration: str, prs: int) -> None:
    if prs < MIN_PRS:
        raise BisectorError(f"--prs must be at least {MIN_PRS}, got {prs}")
    if nodes < 10:
        raise BisectorError(f"--nodes must be at least 10 for the regression to show, got {nodes}")
    seconds = parse_duration(duration, what="--duration")
    if seconds < 30:
        raise BisectorError(f"--duration must be at least 30s of simulated time, got {duration}")


def demo(
    target: Path | None,
    *,
    nodes: int = DEMO_NODES,
    seed: int = 0,
    duration: str = DEMO_DURATION,
    prs: int = DEMO_PRS,
) -> int:
    _check_inputs(nodes, duration, prs)
    where = prepare_dir(target or DEFAULT_DIR)
    typer.echo(f"demo directory: {where}")
    demo_repo = create_demo_repo(where / "kubernetes", nodes=nodes, seed=seed, prs=prs)
    (where / MARKER).write_text(json.dumps({"culprit": demo_repo.culprit, "seed": seed}) + "\n")
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
    options = build_options(
        good=demo_repo.good,
        bad=demo_repo.bad,
        repo=demo_repo.path,
        config=config,
        run_dir=run_dir,
        overrides={"first_parent": True},
    )
    options = dataclasses.replace(options, resume_command=command)
    progress = make_progress(options.estimate_s)
    try:
        report = run_bisection(options, progress=progress)
    except KeyboardInterrupt:
        progress.stop()
        print(f"bisector: demo interrupted; resume with: {command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _print_evidence(report, demo_repo, run_dir)


def _describe_history(demo_repo: DemoRepo, nodes: int, duration: str) -> None:
    typer.echo(
        f"history: {demo_repo.merges} PR merges after good {demo_repo.good[:12]} up to bad "
        f"{demo_repo.bad[:12]}, {len(demo_repo.unbuildable)} commits that do not build"
    )
    typer.echo(f"each evaluation: {nodes} hollow nodes, {duration} of simulated cluster time")


def _value(value: Any) -> str:
    return "no data" if value is None else f"{value:g}"


def _print_evidence(report: Report, demo_repo: DemoRepo, run_dir: Path) -> int:
    data = report.data
    metric = data["metric"]
    culprit = report.culprit
    typer.echo("")
    if culprit is None:
        typer.echo("no single culprit found; candidates: " + ", ".join(data["candidates"]))
        typer.echo(f"report: {run_dir / 'report.md'}")
        return EXIT_MISSED
    pr = f"PR #{culprit['pr']}" if culprit.get("pr") else "no PR"
    typer.echo(f"culprit: {culprit['commit']} {culprit['subject']}")
    merge = culprit.get("merge")
    inside = f", merged as {merge['commit'][:12]}" if merge else ""
    typer.echo(f"  {pr}{inside}; author {culprit['author']}, {culprit['date']}")
    good, bad, threshold = data["good"], data["bad"], data["threshold"]
    typer.echo("evidence:")
    typer.echo(f"  {metric} at good {good['commit'][:12]}: {_value(good['value'])}")
    typer.echo(f"  {metric} at bad  {bad['commit'][:12]}: {_value(bad['value'])}")
    typer.echo(f"  threshold {threshold['value']:g} ({threshold['how']})")
    parent = culprit["parent"]
    typer.echo(
        f"  culprit {_value(culprit['value'])} vs its parent {parent['commit'][:12]} "
        f"{_value(parent['value'])}; confirmed by measuring both again: "
        + ("yes" if culprit["confirmed"] else "NO")
    )
    evaluations = report.evaluations
    skipped = [e for e in evaluations if e["verdict"] == "skip"]
    typer.echo(f"  {len(evaluations)} evaluations over {data['range_size']} first-parent commits")
    for e in skipped:
        typer.echo(f"  skipped {e['commit'][:12]} {e['subject']}: {e['reason']}")
    if not skipped:
        typer.echo(
            f"  skipped: none (the search never picked one of the {len(demo_repo.unbuildable)} "
            "commits that do not build)"
        )
    typer.echo(f"report: {run_dir / 'report.md'} and {run_dir / 'report.html'}")
    if culprit["commit"] != demo_repo.culprit:
        typer.echo(f"this is NOT the planted commit {demo_repo.culprit}")
        return EXIT_MISSED
    typer.echo("this is the commit the demo planted (the second commit of its PR, not the merge)")
    return EXIT_FOUND if culprit["confirmed"] else EXIT_MISSED
