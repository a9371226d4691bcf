"""`bisector run --good G --bad B`: find the commit that made the metric worse."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import typer

from bisector.backends.registry import backend_info
from bisector.bisection.pipeline import run_bisection
from bisector.bisection.plan import Plan, plan_bisection, prefetch_share
from bisector.config import Section, load_config
from bisector.cost import evaluation_s
from bisector.durations import format_duration
from bisector.errors import BisectorError, ConfigError
from bisector.executors import executor_checks
from bisector.exitcodes import RunExit
from bisector.gitrepo import RepoGiven
from bisector.report import summary_lines
from bisector.report.model import Report
from bisector.settings import CHECK_DIR, LOCAL_EXECUTOR, RunFlags, RunSettings
from bisector.ui.progress_lines import make_progress


def build_settings(
    *,
    good: str,
    bad: str,
    repo: Path | None,
    config: Path | None,
    run_dir: Path | None,
    flags: RunFlags,
    resume_command: str | None = None,
) -> RunSettings:
    section = load_config(config) if config else Section()
    if resume_command is None:
        # Resuming continues the run: never with --fresh, which would start it over again.
        argv = [a for a in sys.argv[1:] if a != "--fresh"]
        resume_command = shlex.join(["bisector", *argv]) if argv else ""
    return RunSettings.from_config(
        section,
        good=good,
        bad=bad,
        repo=repo or Path(),
        run_dir=run_dir,
        resume_command=resume_command,
        flags=flags,
        repo_given=RepoGiven.flag(repo),
    )


def dry_run(settings: RunSettings) -> int:
    plan = plan_bisection(settings)
    typer.echo(f"range: {plan.good[:12]}..{plan.bad[:12]}, {_count(plan.range_size, 'commit')}")
    search = "search, descent into the culprit merge" if settings.first_parent else "search"
    revert = ", revert check" if settings.revert_check else ""
    typer.echo(
        f"expected evaluations: {plan.expected_evaluations} (endpoints, {search}, confirm{revert})"
    )
    typer.echo(revert_plan(settings))
    for line in cost_lines(settings, plan):
        typer.echo(line)
    typer.echo(f"run directory: {plan.run_dir}")
    typer.echo(
        f"commands of the first evaluation, good endpoint {plan.good[:12]} "
        f"({settings.backend} backend; each candidate runs the same in its own worktree):"
    )
    for command in plan.commands:
        typer.echo(f"  {command}")
    return RunExit.FOUND


def revert_plan(settings: RunSettings) -> str:
    """What the run does after the culprit is confirmed ([run] revert_check, max_culprits)."""
    if not settings.revert_check:
        return (
            "revert check: off ([run] revert_check = false): one culprit, its revert not measured"
        )
    further = (
        f"if it still measures bad, the next culprit is hunted with the found ones reverted in "
        f"every candidate, up to {settings.max_culprits} culprits ([run] max_culprits; each "
        "further hunt is a search of its own, not counted above)"
        if settings.max_culprits > 1
        else "no further culprit is hunted ([run] max_culprits = 1)"
    )
    return (
        "revert check: the bad endpoint with the culprit reverted (git revert -m 1 for a merge), "
        f"built and measured at full length in its own worktree; {further}"
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def cost_lines(settings: RunSettings, plan: Plan) -> list[str]:
    """The cost model's estimate (bisector.cost): search, rounds, time, cluster-hours, money."""
    s = settings.search
    if s.likelihood == "metric":
        mode = "noise-aware search (metric likelihood)"
    elif s.error_rate > 0:
        mode = f"noise-aware search (error rate {s.error_rate:g})"
    else:
        mode = "git bisect"
    rounds = plan.expected.rounds if plan.expected else plan.expected_evaluations
    search = f"search: {mode}, {_count(s.parallel, 'slot')}; rounds: {rounds}"
    costed, phases = plan.cost, plan.phases
    if costed is None or phases is None:
        return [
            "estimated wall time: unknown; set [run] estimate to one evaluation's time",
            search,
        ]
    lines = [f"estimated wall time: {format_duration(costed.wall_s)}", search]
    # Only the phases that take time: the simulator's "build 0.00s, launch 0.00s" said nothing.
    spans = [
        ("build", phases.build_s),
        ("launch", phases.launch_s),
        ("warmup", phases.warmup_s),
        ("collect", phases.collect_s),
        ("teardown", phases.teardown_s),
    ]
    lines.append("phases: " + ", ".join(f"{n} {format_duration(t)}" for n, t in spans if t > 0))
    hours = f"cluster-hours: {costed.cluster_hours:.1f}"
    if costed.money is not None:
        hours += f"; cost: {costed.money:.2f} at {settings.price_per_cluster_hour:g} per hour"
    lines.append(hours)
    if settings.prefetch_builds:
        share = prefetch_share(settings)
        lines.append(f"builds ahead ({settings.prefetch_builds}): {share:.0%} of builds hidden")
    if settings.check_every_s is not None:
        verdicts = "bad and good" if settings.early_good else "bad"
        lines.append(
            f"early {verdicts} verdicts on: warmups are counted whole here, the run can only "
            "be shorter"
        )
    return lines


def run(
    settings: RunSettings,
    *,
    is_dry_run: bool = False,
    fresh: bool = False,
    as_json: bool = False,
    verbose: bool = False,
) -> int:
    if is_dry_run:
        if as_json:
            raise BisectorError("--json is the final summary of a run; --dry-run prints a plan")
        return dry_run(settings)
    preflight(settings)
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
        report = run_bisection(settings, progress=progress, fresh=fresh)
    except KeyboardInterrupt:
        progress.stop()
        print(
            f"bisector: interrupted; teardown done. Resume with: {settings.resume_command}",
            file=sys.stderr,
        )
        return RunExit.INTERRUPTED
    upload_report(settings, Path(report.run_dir))
    if as_json:
        return print_json(report)
    return print_outcome(report)


def preflight(settings: RunSettings) -> None:
    """What `bisector doctor` finds missing for the backend, refused before anything starts,
    with doctor's own line: under `ulimit -n 256` a procs run would wait on its cluster for
    minutes for a limit doctor already calls too low."""
    info = backend_info(settings.backend)
    if settings.executor != LOCAL_EXECUTOR:
        # The evaluations run elsewhere: what they need there is the executor's to check
        # (this machine's tools and limits are not the pods').
        info.create(settings.backend_context(CHECK_DIR))
        missing = [f for f in executor_checks(settings) if not f.ok]
        if missing:
            raise ConfigError(
                f"MISSING {missing[0].what}: {missing[0].detail} (bisector doctor --config "
                f"{settings.config_file} says the same; nothing was started)"
            )
        return
    # The run's own checkout, not the current directory: procs asks its tree which Go it needs.
    missing = [f for f in info.doctor(settings.backend_section, settings.repo) if not f.ok]
    if not missing:
        return
    # A mistake in the backend's own table is the problem to say (doctor's findings may
    # come from it): read the table as the run would, then say doctor's first line.
    info.create(settings.backend_context(CHECK_DIR))
    raise ConfigError(
        f"MISSING {missing[0].what}: {missing[0].detail} (bisector doctor --config "
        f"{settings.config_file} says the same; nothing was started)"
    )


def upload_report(settings: RunSettings, run_dir: Path) -> None:
    """Copy the run's logs, journal and reports to GCS (never credentials)."""
    if not settings.upload:
        return
    from bisector.upload import upload_run

    try:
        result = upload_run(run_dir, settings.upload)
    except BisectorError as exc:  # the bisection's outcome stands; say what did not upload
        print(f"bisector: warning: upload to {settings.upload} failed: {exc}", file=sys.stderr)
        return
    typer.echo(f"uploaded {len(result.uploaded)} files to {settings.upload}")


def outcome_code(report: Report) -> RunExit:
    if report.teardown_failures:
        return RunExit.LEFT_UP
    if not report.confirmed:
        return RunExit.INCONCLUSIVE
    return RunExit.PARTIAL if report.unexplained else RunExit.FOUND


@dataclass(frozen=True)
class RunResult:
    """What `bisector run --json` prints (docs/json.md): the exit code, where the reports
    are, the disk the run uses, and the report itself (report.json's schema)."""

    exit_code: int
    report_json: str
    report_md: str
    report_html: str
    disk_bytes: int
    logs_bytes: int
    report: dict[str, object]


def print_json(report: Report) -> int:
    from bisector.report.smoking_gun import drawn_log_dirs
    from bisector.runfiles import disk_use

    code = outcome_code(report)
    run_dir = Path(report.run_dir)
    use = disk_use(run_dir, drawn_log_dirs(report))
    result = RunResult(
        exit_code=int(code),
        report_json=str(run_dir / "report.json"),
        report_md=str(run_dir / "report.md"),
        report_html=str(run_dir / "report.html"),
        disk_bytes=use.total_bytes,
        logs_bytes=use.logs_bytes,
        report=report.to_json(),
    )
    typer.echo(json.dumps(asdict(result), indent=2, default=str))
    return _said_left_up(report, code)


def print_outcome(report: Report) -> int:
    for line in summary_lines(report):
        typer.echo(line)
    return _said_left_up(report, outcome_code(report))


def _said_left_up(report: Report, code: RunExit) -> int:
    """A failed teardown is said loudly, on stderr, whatever stdout carried."""
    if code == RunExit.LEFT_UP:
        print(
            f"bisector: error: {len(report.teardown_failures)} teardown(s) failed; clusters may "
            f"still be running: bisector cleanup --run-dir {report.run_dir}",
            file=sys.stderr,
        )
    return code
