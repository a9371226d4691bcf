"""`bisector doctor [--backend NAME] [--config FILE]`: is this machine ready to bisect?

Checks the tools a backend runs (each with its own version command, through
the one subprocess choke point), the credentials the gce backend needs, and the
config file, and says for each problem what to install or set. Exit 0 when
everything a backend needs is there, 1 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from bisector import proc
from bisector.backends.base import BackendContext
from bisector.config import Section, load_config
from bisector.errors import BisectorError

_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Tool:
    name: str
    version_cmd: tuple[str, ...]
    install: str


TOOLS = {
    t.name: t
    for t in (
        Tool("git", ("git", "--version"), "install git (e.g. apt-get install git)"),
        Tool("make", ("make", "--version"), "install GNU make (e.g. apt-get install make)"),
        Tool("docker", ("docker", "version", "--format", "{{.Server.Version}}"),
             "install Docker and start the daemon; your user must be able to run `docker ps`"),
        Tool("gcloud", ("gcloud", "--version"),
             "install the Google Cloud SDK: https://cloud.google.com/sdk/docs/install"),
        Tool("kind", ("kind", "version"),
             "install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"),
        Tool("kubectl", ("kubectl", "version", "--client"),
             "install kubectl: https://kubernetes.io/docs/tasks/tools/"),
    )
}  # fmt: skip

NEEDS = {
    "sim": ("git",),
    "local": ("git",),
    "gce": ("git", "make", "docker", "gcloud"),
    "kind": ("git", "make", "docker", "kind", "kubectl"),
}


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
    if backend is not None and backend not in NEEDS:
        raise BisectorError(f"unknown backend {backend!r}; choose one of: {', '.join(NEEDS)}")
    report = Report()
    names = NEEDS[backend] if backend else tuple(TOOLS)
    for name in names:
        _check_tool(TOOLS[name], report)
    if backend == "gce":
        _check_gcloud_credentials(report, root)
    if root is not None:
        _check_run_config(root, report)
    if root is not None and backend in ("gce", "kind", "local"):
        _check_backend_config(backend, root, report)
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


def _gcloud(*args: str) -> str | None:
    try:
        return proc.run(["gcloud", *args], timeout=_TIMEOUT_S).stdout.strip()
    except proc.CommandError:
        return None


def _check_gcloud_credentials(report: Report, root: Section | None) -> None:
    account = _gcloud("auth", "list", "--filter=status:ACTIVE", "--format=value(account)")
    if account:
        report.ok("gcloud credentials", account.splitlines()[0])
    else:
        report.bad("gcloud credentials", "no active account; run `gcloud auth login`")
    configured = None
    if root is not None:
        configured = root.table("backends").table("gce").opt_str("project")
    project = _gcloud("config", "get-value", "project")
    if configured:
        report.ok("gcp project", f"{configured} (from the config)")
    elif project and project != "(unset)":
        report.ok("gcp project", f"{project} (gcloud default; set `project` in the config)")
    else:
        report.bad("gcp project", "set `project` in [backends.gce] or `gcloud config set project`")


def _check_run_config(root: Section, report: Report) -> None:
    """The [run], [search] and [metrics.*] tables, read as `bisector run` reads them."""
    from bisector.search.options import RunOptions

    try:
        RunOptions.from_config(root, good="HEAD", bad="HEAD")
    except BisectorError as exc:
        report.bad("config", str(exc))


def _check_backend_config(backend: str, root: Section, report: Report) -> None:
    from bisector.backends.registry import create_backend

    section = root.table("backends").table(backend)
    try:
        create_backend(backend, BackendContext(section, Path(".bisector-doctor")))
    except BisectorError as exc:
        report.bad("config", str(exc))
        return
    report.ok("config", f"[backends.{backend}] in {root.file}")
    if backend == "gce":
        checkout = section.opt_str("base_checkout")
        if checkout and not (Path(checkout).expanduser() / "cluster" / "kube-up.sh").is_file():
            report.bad("base_checkout", f"{checkout} has no cluster/kube-up.sh; point it at a "
                       "Kubernetes checkout")  # fmt: skip
