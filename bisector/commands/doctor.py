"""`bisector doctor [--backend NAME] [--config FILE]`: is this machine ready to bisect?

Checks the tools a backend runs (each with its own version command, through
the one subprocess choke point), the credentials the gce backend needs, and the
config file, and says for each problem what to install or set. Exit 0 when
everything a backend needs is there, 1 otherwise. With `--rehearse` (gce only)
it then runs one whole evaluation of the config on the GCE twin with a
kubernetes checkout's real scripts (bisector.commands.doctor_rehearse); 3 when
that rehearsal does not pass.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bisector import proc
from bisector.backends.base import BackendContext
from bisector.backends.registry import TOOLS, BackendInfo, Tool, backend_info
from bisector.config import Section, load_config
from bisector.errors import BisectorError
from bisector.exitcodes import DoctorExit

_TIMEOUT_S = 30.0


class Report:
    def __init__(self) -> None:
        self.problems = 0

    def ok(self, what: str, detail: str) -> None:
        typer.echo(f"ok       {what}: {detail}")

    def bad(self, what: str, advice: str) -> None:
        self.problems += 1
        typer.echo(f"MISSING  {what}: {advice}")


def doctor(
    backend: str | None,
    config: Path | None,
    *,
    rehearse: bool = False,
    repo: Path | None = None,
    keep: bool = False,
) -> int:
    root = load_config(config) if config is not None else None
    if backend is None and root is not None and "backend" in root.table("run"):
        backend = root.table("run").get_str("backend")
    info = backend_info(backend) if backend is not None else None
    if rehearse:
        _can_rehearse(info, config)
    elif repo is not None or keep:
        raise BisectorError("--repo and --keep are options of --rehearse; add --rehearse")
    report = Report()
    config_ok = True
    names = info.tools if info else tuple(TOOLS)
    for name in names:
        _check_tool(TOOLS[name], report)
    if root is not None:
        _check_run_config(root, report)
    if info is not None and info.name != "sim":
        section = (root or Section()).table("backends").table(info.name)
        if root is not None:
            config_ok = _check_backend_config(info, section, report)
        if root is not None or info.name == "gce":
            for finding in info.doctor(section):
                (report.ok if finding.ok else report.bad)(finding.what, finding.detail)
    typer.echo("ready" if not report.problems else f"{report.problems} problem(s) found")
    # (_can_rehearse made sure a rehearsal has its config)
    if (
        rehearse
        and root is not None
        and not _rehearsal_passed(root, repo or Path(), keep=keep, ok=config_ok)
    ):
        return int(DoctorExit.REHEARSAL_FAILED)
    return int(DoctorExit.READY if not report.problems else DoctorExit.PROBLEMS)


def _can_rehearse(info: BackendInfo | None, config: Path | None) -> None:
    """One line and exit 2 for a rehearsal that cannot be: not gce, or no config."""
    if info is None or info.name != "gce":
        name = info.name if info else "sim (the default)"
        raise BisectorError(
            f"--rehearse exists for the gce backend only (the backend here is {name}); "
            'drop --rehearse or rehearse a config with backend = "gce"'
        )
    if config is None:
        raise BisectorError("--rehearse needs --config FILE: the gce config to rehearse")


def _rehearsal_passed(root: Section, repo: Path, *, keep: bool, ok: bool) -> bool:
    from bisector.commands.doctor_rehearse import run_rehearsal

    if not ok:
        typer.echo("rehearsal not run: fix the config problem above first")
        return False
    outcome = run_rehearsal(root.table("backends").table("gce"), repo, keep=keep)
    for line in outcome.lines:
        typer.echo(line)
    return outcome.passed


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


def _check_run_config(root: Section, report: Report) -> None:
    """The [run], [search] and [metrics.*] tables, read as `bisector run` reads them."""
    from bisector.settings import RunSettings

    try:
        RunSettings.from_config(root, good="HEAD", bad="HEAD")
    except BisectorError as exc:
        report.bad("config", str(exc))


def _check_backend_config(info: BackendInfo, section: Section, report: Report) -> bool:
    try:
        info.create(BackendContext(section, Path(".bisector-doctor")))
    except BisectorError as exc:
        report.bad("config", str(exc))
        return False
    report.ok("config", f"[backends.{info.name}] in {section.file}")
    return True
