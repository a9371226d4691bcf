"""`bisector run --good G --bad B`: find the commit that made the metric worse."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from bisector.config import Section, load_config
from bisector.durations import format_duration
from bisector.errors import EXIT_INTERRUPTED, BisectorError
from bisector.search import Report, RunOptions, plan_bisection, run_bisection
from bisector.search.progress import make_progress

EXIT_FOUND = 0
EXIT_INCONCLUSIVE = 3  # the search ended without a single confirmed culprit


def build_options(
    *,
    good: str,
    bad: str,
    repo: Path,
    config: Path | None,
    run_dir: Path | None,
    overrides: dict[str, object],
) -> RunOptions:
    section = load_config(config) if config else Section()
    resume = shlex.join(["bisector", *sys.argv[1:]]) if sys.argv[1:] else ""
    return RunOptions.from_config(
        section,
        good=good,
        bad=bad,
        repo=repo,
        run_dir=run_dir,
        resume_command=resume,
        overrides=overrides,
    )


def dry_run(options: RunOptions) -> int:
    plan = plan_bisection(options)
    typer.echo(f"range: {plan.good[:12]}..{plan.bad[:12]}, {plan.range_size} commits")
    search = "search, descent into the culprit merge" if options.first_parent else "search"
    typer.echo(f"expected evaluations: {plan.expected_evaluations} (endpoints, {search}, confirm)")
    if plan.estimate_s is None:
        typer.echo("estimated wall time: unknown; set [run] estimate to one evaluation's time")
    else:
        typer.echo(f"estimated wall time: {format_duration(plan.estimate_s)}")
    typer.echo(f"run directory: {plan.run_dir}")
    typer.echo(
        f"commands of the first evaluation, good endpoint {plan.good[:12]} "
        f"({options.backend} backend; each candidate runs the same in its own worktree):"
    )
    for command in plan.commands:
        typer.echo(f"  {command}")
    return 0


def run(options: RunOptions, *, is_dry_run: bool = False) -> int:
    if is_dry_run:
        return dry_run(options)
    progress = make_progress(options.estimate_s)
    try:
        report = run_bisection(options, progress=progress)
    except KeyboardInterrupt:
        progress.stop()
        print(
            f"bisector: interrupted; teardown done. Resume with: {options.resume_command}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    upload_report(options, Path(report.data["run_dir"]))
    return print_outcome(report)


def upload_report(options: RunOptions, run_dir: Path) -> None:
    """Copy the run directory (every evaluation's logs and scores, the report) to GCS."""
    if not options.upload:
        return
    from bisector.upload import upload_run

    try:
        result = upload_run(run_dir, options.upload)
    except BisectorError as exc:  # the bisection's outcome stands; say what did not upload
        print(f"bisector: warning: upload to {options.upload} failed: {exc}", file=sys.stderr)
        return
    typer.echo(f"uploaded {len(result.uploaded)} files to {options.upload}")


def print_outcome(report: Report) -> int:
    culprit = report.culprit
    run_dir = report.data["run_dir"]
    search = report.data.get("search", {})
    if culprit is None and report.data["status"] == "unsure":
        likely = search["likely_range"]
        typer.echo(
            f"unsure: the evaluation budget ran out at confidence {search['confidence']:.3f}; "
            f"the culprit is among these {len(likely['commits'])} commits with probability "
            f"{likely['probability']:.3f}:"
        )
        for commit in likely["commits"][:20]:
            typer.echo(f"  {commit}")
        typer.echo(f"report: {run_dir}/report.md")
        return EXIT_INCONCLUSIVE
    if culprit is None:
        typer.echo(
            "no single culprit: it could be any of these (the others could not be measured):"
        )
        for commit in report.data["candidates"]:
            typer.echo(f"  {commit}")
        typer.echo(f"report: {run_dir}/report.md")
        return EXIT_INCONCLUSIVE
    pr = f" (PR #{culprit['pr']})" if culprit["pr"] else ""
    typer.echo(f"culprit: {culprit['commit']} {culprit['subject']}{pr}")
    typer.echo(f"evaluations: {len(report.evaluations)}; confirmed: {culprit['confirmed']}")
    if culprit.get("confidence") is not None:
        typer.echo(f"confidence: {culprit['confidence']:.4f}")
    typer.echo(f"report: {run_dir}/report.md")
    return EXIT_FOUND if culprit["confirmed"] else EXIT_INCONCLUSIVE
