"""`bisector doctor [--backend NAME] [--config FILE]`: is this machine ready to bisect?

Checks the tools a backend runs (each with its own version command, through
the one subprocess choke point), the credentials the gce backend needs, and the
config file, and says for each problem what to install or set. Exit 0 when
everything a backend needs is there, 1 otherwise.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bisector import proc
from bisector.backends.base import BackendContext
from bisector.backends.registry import TOOLS, BackendInfo, Tool, backend_info
from bisector.config import Section, load_config
from bisector.errors import BisectorError

_TIMEOUT_S = 30.0


class Report:
    def __init__(self) -> None:
        self.problems = 0

    def ok(self, what: str, detail: str) -> None:
        typer.echo(f"ok       {what}: {detail}")

    def bad(self, what: str, advice: str) -> None:
        self.problems += 1
        typer.echo(f"MISSING  {what}: {advice}")


def doctor(backend: str | None, config: Path | None) -> int:
    root = load_config(config) if config is not None else None
    if backend is None and root is not None and "backend" in root.table("run"):
        backend = root.table("run").get_str("backend")
    info = backend_info(backend) if backend is not None else None
    report = Report()
    names = info.tools if info else tuple(TOOLS)
    for name in names:
        _check_tool(TOOLS[name], report)
    if root is not None:
        _check_run_config(root, report)
    if info is not None and info.name != "sim":
        section = (root or Section()).table("backends").table(info.name)
        if root is not None:
            _check_backend_config(info, section, report)
        if root is not None or info.name == "gce":
            for finding in info.doctor(section):
                (report.ok if finding.ok else report.bad)(finding.what, finding.detail)
    typer.echo("ready" if not report.problems else f"{report.problems} problem(s) found")
    return 0 if not report.problems else 1


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


def _check_backend_config(info: BackendInfo, section: Section, report: Report) -> None:
    try:
        info.create(BackendContext(section, Path(".bisector-doctor")))
    except BisectorError as exc:
        report.bad("config", str(exc))
        return
    report.ok("config", f"[backends.{info.name}] in {section.file}")
