"""`bisector doctor [--backend NAME] [--config FILE] [--json]`: is this machine ready?

Checks one backend: `--backend`, else the config's `[run] backend`, else the default
(sim, as `bisector run` without --config): the tools it runs (each with its own version
command, through the one subprocess choke point), its own checks (the registry's
`checks` hook: credentials, quota, commands) and the config file, and says for each
problem what to install or set. The other backends are listed as available, with what
they would check, not as problems: every backend describes itself once in
bisector.backends.registry, so a new one appears here with nothing added to this file.
Exit 0 when everything the backend needs is there, 1 otherwise. With `--rehearse` (gce
only) it then runs one whole evaluation of the config on the GCE twin with a kubernetes
checkout's real scripts (bisector.twin.doctor_rehearsal); 3 when that rehearsal does
not pass. `--json` prints `DoctorResult` (docs/json.md) instead of lines.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bisector import proc
from bisector.backends.base import BackendContext
from bisector.backends.registry import (
    BACKENDS,
    DEFAULT_BACKEND,
    TOOLS,
    BackendInfo,
    Tool,
    backend_info,
)
from bisector.config import Section, load_config
from bisector.errors import BisectorError
from bisector.exitcodes import DoctorExit
from bisector.gitrepo import GitRepo
from bisector.settings import CHECK_DIR, LOCAL_EXECUTOR, RunFlags, RunSettings, check_config

if TYPE_CHECKING:
    from bisector.nightly.config import JobConfig, NightlyConfig

_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Check:
    """One line: ok with what was found, or a problem with what to do."""

    ok: bool
    what: str
    detail: str


@dataclass(frozen=True)
class Available:
    """A backend not checked this time, and what checking it would look at."""

    backend: str
    summary: str
    tools: list[str]
    own_checks: bool  # the backend has checks of its own beyond its tools
    command: str  # the doctor command that checks it


@dataclass(frozen=True)
class Rehearsal:
    passed: bool
    lines: list[str]


@dataclass
class DoctorResult:
    """What `bisector doctor --json` prints (docs/json.md)."""

    backend: str  # the backend checked
    chosen_by: str  # "--backend", "config" ([run] backend) or "default"
    config: str | None  # the config file read, if any
    checks: list[Check] = field(default_factory=list)
    available: list[Available] = field(default_factory=list)  # the others, not checked
    rehearsal: Rehearsal | None = None

    @property
    def problems(self) -> int:
        return sum(not c.ok for c in self.checks)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "problems": self.problems, "ready": not self.problems}


class Report:
    """The checks as they are found: printed at once (text) or kept for --json."""

    def __init__(self, result: DoctorResult, *, as_json: bool) -> None:
        self.result = result
        self.as_json = as_json

    @property
    def problems(self) -> int:
        return self.result.problems

    def ok(self, what: str, detail: str) -> None:
        self._add(Check(True, what, detail))

    def bad(self, what: str, advice: str) -> None:
        self._add(Check(False, what, advice))

    def _add(self, check: Check) -> None:
        self.result.checks.append(check)
        if not self.as_json:
            typer.echo(f"{'ok      ' if check.ok else 'MISSING '} {check.what}: {check.detail}")


def doctor(
    backend: str | None,
    config: Path | None,
    *,
    rehearse: bool = False,
    repo: Path | None = None,
    keep: bool = False,
    as_json: bool = False,
) -> int:
    root = load_config(config) if config is not None else None
    if root is not None and "nightly" in root:
        return _doctor_nightly(config, backend, rehearse=rehearse, keep=keep, as_json=as_json)
    chosen_by = "--backend" if backend is not None else "default"
    flags = RunFlags(backend=backend)  # as `bisector run --backend NAME` would get it
    if backend is None and root is not None and "backend" in root.table("run"):
        backend = root.table("run").get_str("backend")
        chosen_by = "config"
    info = backend_info(backend or DEFAULT_BACKEND)
    if rehearse:
        _can_rehearse(info, config)
    elif keep:
        raise BisectorError("--keep is an option of --rehearse; add --rehearse")
    result = DoctorResult(info.name, chosen_by, None if config is None else str(config))
    report = Report(result, as_json=as_json)
    if not as_json:
        typer.echo(_heading(info, chosen_by))
    config_ok = True
    for name in info.tools:
        _check_tool(TOOLS[name], report)
    _say_log_scanner(report)
    settings = None
    if root is not None:
        settings = _check_run_config(root, flags, report, whole=not info.doctor_builds)
    if settings is not None and settings.executor != LOCAL_EXECUTOR:
        _check_executor(settings, report)
    if info.doctor_builds:
        section = (root or Section()).table("backends").table(info.name)
        if root is not None:
            config_ok = _check_backend_config(info, _context(settings, info, section), report)
        if root is not None or info.doctor_without_config:
            for finding in info.doctor(section, repo):
                (report.ok if finding.ok else report.bad)(finding.what, finding.detail)
    if chosen_by == "default":
        result.available = [_available(other) for other in BACKENDS.values() if other != info]
    if not as_json:
        typer.echo("ready" if not report.problems else f"{report.problems} problem(s) found")
        _print_available(result.available)
    # (_can_rehearse made sure a rehearsal has its config)
    if rehearse and root is not None:
        result.rehearsal = _rehearse(info, root, repo or Path(), keep=keep, ok=config_ok)
        if not as_json:
            for line in result.rehearsal.lines:
                typer.echo(line)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    if result.rehearsal is not None and not result.rehearsal.passed:
        return int(DoctorExit.REHEARSAL_FAILED)
    return int(DoctorExit.READY if not report.problems else DoctorExit.PROBLEMS)


def _doctor_nightly(
    config: Path | None, backend: str | None, *, rehearse: bool, keep: bool, as_json: bool
) -> int:
    """A `bisector nightly` config: each job that hunts is checked as its own bisection
    (its backend's tools and checks, on its `repo`), not read as a run's config, where its
    [nightly] table is unknown."""
    from bisector.nightly.config import load_nightly_config

    if backend is not None or rehearse or keep:
        raise BisectorError(
            f"{config} is a nightly config: doctor checks each job's own backend; drop "
            "--backend, --rehearse and --keep (or pass a run's config)"
        )
    assert config is not None  # (a root table was read from it)
    result = DoctorResult("nightly", "config", str(config))
    report = Report(result, as_json=as_json)
    try:
        nightly = load_nightly_config(config)
    except BisectorError as exc:
        report.bad("config", str(exc))
    else:
        for job in nightly.jobs:
            _check_job(nightly, job, report)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        typer.echo("ready" if not report.problems else f"{report.problems} problem(s) found")
    return int(DoctorExit.READY if not report.problems else DoctorExit.PROBLEMS)


def _check_job(nightly: NightlyConfig, job: JobConfig, report: Report) -> None:
    """One nightly job: its hunt's backend, checked with the hunt's own settings."""
    from bisector.nightly.hunt import run_settings

    if job.bisect_config is None:
        report.ok(f"job {job.name}", "reports its regressions (no [nightly.jobs.run]: no hunt)")
        return
    # Read as the hunt reads them (they were read once already, when the config loaded).
    settings = run_settings(nightly, job, "HEAD", "HEAD", CHECK_DIR)
    info = backend_info(settings.backend)
    if not report.as_json:
        typer.echo(f"job {job.name}: the {info.name} backend, on {job.repo}")
    _check_checkout(job, report)
    for name in info.tools:
        _check_tool(TOOLS[name], report)
    if info.doctor_builds and _check_backend_config(
        info, settings.backend_context(CHECK_DIR), report
    ):
        for finding in info.doctor(settings.backend_section, job.repo):
            (report.ok if finding.ok else report.bad)(finding.what, finding.detail)


def _say_log_scanner(report: Report) -> None:
    """Which scanner reads logs: never a problem (the scores are the same), but without
    the compiled one every score takes ~2x the time, and nothing else would say so."""
    from bisector.logs import glogscan

    if glogscan.available():
        report.ok("log scanner", "compiled (bisector/logs/_glogscan.c)")
    else:
        report.ok(
            "log scanner",
            "numpy only, ~2x slower to score (the C extension was not built: install a C "
            "compiler and Python's headers, e.g. apt-get install gcc python3-dev, then make setup)",
        )


def _check_checkout(job: JobConfig, report: Report) -> None:
    """A hunting job's `repo` is a checkout: one that does not exist would pass doctor and
    fail the hunt at night, after the scoring. The fix names the job's key."""
    try:
        GitRepo(job.repo or Path(), given=job.repo_given)
    except BisectorError as exc:
        report.bad(f"job {job.name}: repo", f"{exc} (its hunt bisects there)")
        return
    report.ok(f"job {job.name}: repo", f"{job.repo} is a git checkout")


def _heading(info: BackendInfo, chosen_by: str) -> str:
    why = {
        "--backend": "--backend",
        "config": "the config's [run] backend",
        "default": "the default without --config; --backend NAME or --config FILE checks another",
    }[chosen_by]
    return f"checking the {info.name} backend ({why})"


def _available(info: BackendInfo) -> Available:
    return Available(
        info.name,
        info.summary,
        list(info.tools),
        info.checks is not None,
        f"bisector doctor --backend {info.name}",
    )


def _print_available(available: list[Available]) -> None:
    if not available:
        return
    typer.echo("other backends, not checked (not problems): bisector doctor --backend NAME")
    width = max(len(a.backend) for a in available)
    for a in available:
        own = ", and its own checks" if a.own_checks else ""
        typer.echo(f"  {a.backend:<{width}}  {a.summary}: {', '.join(a.tools)}{own}")


def _can_rehearse(info: BackendInfo, config: Path | None) -> None:
    """One line and exit 2 for a rehearsal that cannot be: a backend without one (the
    registry's `rehearsal`), or no config."""
    if info.rehearsal is None:
        name = info.name if info.name != DEFAULT_BACKEND else f"{info.name} (the default)"
        can = [b.name for b in BACKENDS.values() if b.rehearsal is not None]
        raise BisectorError(
            f"--rehearse exists for the {' and '.join(can)} backend only (the backend here is "
            f'{name}); drop --rehearse or rehearse a config with backend = "{can[0]}"'
        )
    if config is None:
        raise BisectorError(f"--rehearse needs --config FILE: the {info.name} config to rehearse")


def _rehearse(info: BackendInfo, root: Section, repo: Path, *, keep: bool, ok: bool) -> Rehearsal:
    if not ok:
        return Rehearsal(False, ["rehearsal not run: fix the config problem above first"])
    outcome = info.rehearse(root.table("backends").table(info.name), repo, keep=keep)
    return Rehearsal(outcome.passed, list(outcome.lines))


def _check_tool(tool: Tool, report: Report) -> None:
    try:
        result = proc.run(list(tool.version_cmd), timeout=_TIMEOUT_S)
    except proc.CommandError as exc:
        if exc.code is None and not exc.timed_out:
            report.bad(tool.name, f"not found on PATH; {tool.install}")
        else:
            report.bad(tool.name, f"`{' '.join(tool.version_cmd)}` {exc.why}; {tool.install}")
        return
    first = (result.stdout or result.stderr).strip().splitlines()
    report.ok(tool.name, first[0] if first else "present")


def _check_executor(settings: RunSettings, report: Report) -> None:
    """Where the evaluations run ([run] executor): reachable, allowed, its image there."""
    from bisector.executors import executor_checks

    if not report.as_json:
        typer.echo(f"the {settings.executor} executor ([executor.{settings.executor}]):")
    try:
        findings = executor_checks(settings)
    except BisectorError as exc:
        report.bad(f"[executor.{settings.executor}]", str(exc))
        return
    for finding in findings:
        (report.ok if finding.ok else report.bad)(finding.what, finding.detail)


def _check_run_config(
    root: Section, flags: RunFlags, report: Report, *, whole: bool
) -> RunSettings | None:
    """The [run], [search] and [metrics.*] tables, read as `bisector run` reads them;
    `whole`: the backend's table too (a backend doctor does not build, the sim's), as
    every command that reads a config checks it."""
    try:
        if whole:
            return check_config(root, flags)
        return RunSettings.from_config(root, good="HEAD", bad="HEAD", flags=flags)
    except BisectorError as exc:
        report.bad("config", str(exc))
        return None


def _context(settings: RunSettings | None, info: BackendInfo, section: Section) -> BackendContext:
    """The context `bisector run` would build the backend from (its warmup, seed and
    looks); with [run] unreadable (said already), the backend's table on [run]'s defaults."""
    if settings is None:
        settings = RunSettings("HEAD", "HEAD", backend=info.name, backend_section=section)
    return settings.backend_context(CHECK_DIR)


def _check_backend_config(info: BackendInfo, context: BackendContext, report: Report) -> bool:
    try:
        info.create(context)
    except BisectorError as exc:
        report.bad("config", str(exc))
        return False
    report.ok("config", f"[backends.{info.name}] in {context.section.file}")
    return True
