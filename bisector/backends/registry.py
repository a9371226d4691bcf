"""The one table of backends: each describes itself once, here.

Doctor reads the tools a backend needs and its extra checks from here, the CLI
its help line, `bisector run` its factory. Adding a backend is one module plus
one entry below. Modules are imported lazily so `bisector score` does not pay for
the imports of every backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from bisector.backends.base import Backend, BackendContext
from bisector.config import Section
from bisector.cost import PhaseModel
from bisector.errors import ConfigError


@dataclass(frozen=True)
class Tool:
    """An executable a backend runs, how to ask its version, and how to install it."""

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
        Tool("gsutil", ("gsutil", "version"),
             "install the Google Cloud SDK's gsutil component: `gcloud components install gsutil`"),
        Tool("python", ("python", "--version"),
             "the 2017 kubemark scripts call `python`; install python (or python-is-python3)"),
        Tool("kind", ("kind", "version"),
             "install kind >= v0.11: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"),
        Tool("kubectl", ("kubectl", "version", "--client"),
             "install kubectl: https://kubernetes.io/docs/tasks/tools/"),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One line of `bisector doctor`: ok with a detail, or a problem with what to do."""

    ok: bool
    what: str
    detail: str


# A backend's own checks, given its table and the kubernetes checkout the run bisects
# (None: the current directory; procs reads the Go its go.mod or hack/ asks for there).
DoctorCheck = Callable[[Section, Path | None], list[Finding]]


# One evaluation's wall time from a backend's table and the run's warmup (`own_estimate`).
OwnEstimate = Callable[[Section, float], float]


class Rehearsed(Protocol):
    """What `doctor --rehearse` prints of a rehearsal, and whether it passed."""

    passed: bool
    lines: list[str]


class RehearsalDriver(Protocol):
    """Rehearses a backend's table with a checkout's HEAD (`doctor --rehearse`)."""

    def __call__(self, section: Section, repo: Path, *, keep: bool) -> Rehearsed: ...


@dataclass(frozen=True)
class BackendInfo:
    name: str
    summary: str  # the CLI's help line
    module: str  # bisector.backends.<module>, imported on use
    cls: str  # the Backend class in it; its KEYS are the config keys of [backends.<name>]
    tools: tuple[str, ...]  # keys of TOOLS that `doctor` checks
    checks: str | None = None  # "module:function" returning doctor Findings for the section
    # `bisector cleanup` tears down what the journal shows left up by calling the backend's
    # own teardown; backends that record their resources (resources.json) replay those.
    journal_teardown: bool = False
    # Whether a run can hand over a ClusterLoader2 report (`cl2` metrics read it from the
    # evaluation's log dir, bisector/collected.py): None, never (no step runs CL2); else
    # the keys of [backends.<name>] one of which must be set for it ((): always possible).
    cl2_report_from: tuple[str, ...] | None = None
    # [run] warmup when the config sets none (0: the backend needs one said): the sim
    # backend runs without a config, as `run -h` and `doctor` promise (configs/default.toml).
    default_warmup_s: float = 0.0
    # Where the cost model takes this backend's phase durations from (bisector.cost).
    phases: PhaseModel = PhaseModel.UNKNOWN
    # `doctor` builds the backend from its table to check it (not the sim: its duration
    # comes from [run] warmup, which doctor does not hand it; `run` checks its table).
    doctor_builds: bool = True
    # Its own `checks` run without a --config too (gce: the account and project gcloud has).
    doctor_without_config: bool = False
    # "module:function", a RehearsalDriver: `doctor --rehearse` (the gce backend on its twin).
    rehearsal: str | None = None
    # "module:function" giving the revisions of the repository an evaluation checks out
    # beside the candidate, from the backend's table (procs: its harness commit): an
    # evaluation run elsewhere, which fetches only the candidate, fetches those too.
    revisions: str | None = None
    # "module:function" giving one evaluation's wall time from the backend's table and the
    # run's warmup, when `[run] estimate` says none: the sim knows what it simulates, so a
    # dry run of the demo says its time.
    own_estimate: str | None = None

    def cl2_problem(self, section: Section) -> str | None:
        """Why this backend, configured by `section`, gives no CL2 report (None: it can).

        A cl2 metric asked of such a backend is a skip at every evaluation: callers refuse
        it before launching a cluster."""
        if self.cl2_report_from is None:
            return f"the {self.name} backend runs no ClusterLoader2 workload: it has no CL2 report"
        keys = self.cl2_report_from
        if keys and not any(k in section for k in keys):
            return (
                f"[backends.{self.name}] sets no {' or '.join(keys)}: nothing writes a CL2 "
                "report (e.g. clusterloader2 --report-dir=...)"
            )
        return None

    def backend_class(self) -> Callable[[BackendContext], Backend]:
        module = importlib.import_module(f"bisector.backends.{self.module}")
        return cast("Callable[[BackendContext], Backend]", getattr(module, self.cls))

    def create(self, context: BackendContext) -> Backend:
        return self.backend_class()(context)

    def keys(self) -> tuple[str, ...]:
        return tuple(getattr(self.backend_class(), "KEYS", ()))

    def doctor(self, section: Section, tree: Path | None = None) -> list[Finding]:
        if self.checks is None:
            return []
        module, function = self.checks.split(":")
        check = cast("DoctorCheck", getattr(importlib.import_module(module), function))
        return check(section, tree)

    def revisions_needed(self, section: Section) -> tuple[str, ...]:
        if self.revisions is None:
            return ()
        module, function = self.revisions.split(":")
        needed = cast("Callable[[Section], tuple[str, ...]]", _function(module, function))
        return needed(section)

    def estimate_s(self, section: Section, warmup_s: float) -> float | None:
        """One evaluation's wall time as the backend reckons it from `section` (None: it
        cannot say; `[run] estimate` must)."""
        if self.own_estimate is None:
            return None
        module, function = self.own_estimate.split(":")
        estimate = cast("OwnEstimate", getattr(importlib.import_module(module), function))
        return estimate(section, warmup_s)

    def rehearse(self, section: Section, repo: Path, *, keep: bool) -> Rehearsed:
        """Run this backend's rehearsal (callers check `rehearsal` is set first)."""
        if self.rehearsal is None:
            raise ConfigError(f"the {self.name} backend has no rehearsal")
        module, function = self.rehearsal.split(":")
        driver = cast("RehearsalDriver", getattr(importlib.import_module(module), function))
        return driver(section, repo, keep=keep)


BACKENDS: dict[str, BackendInfo] = {
    b.name: b
    for b in (
        BackendInfo(
            "sim",
            "the built-in kubemark simulator (the demo; no cluster)",
            "sim",
            "SimBackend",
            ("git",),
            default_warmup_s=300.0,  # 5m, configs/default.toml's
            phases=PhaseModel.SIMULATED,
            doctor_builds=False,
            own_estimate="bisector.backends.sim:evaluation_estimate_s",
        ),
        BackendInfo(
            "local",
            "your own build/launch/collect/teardown commands",
            "local",
            "LocalBackend",
            ("git",),
            "bisector.backends.local_doctor:check",
            journal_teardown=True,
            cl2_report_from=(),  # every command is given $BISECTOR_REPORT_DIR
        ),
        BackendInfo(
            "kind",
            "kubemark inside kind (Kubernetes v1.15 and later)",
            "kind.backend",
            "KindBackend",
            ("git", "make", "docker", "kind", "kubectl"),
            "bisector.backends.kind.checks:check",
            cl2_report_from=("workload",),  # only the workload gets the report dir
        ),
        BackendInfo(
            "gce",
            "kubemark on Google Compute Engine with the candidate's own scripts (2017 era)",
            "gce.backend",
            "GceBackend",
            ("git", "make", "docker", "gcloud", "gsutil", "python"),
            "bisector.backends.gce.checks:check",
            phases=PhaseModel.KUBEMARK_2017,
            doctor_without_config=True,
            rehearsal="bisector.twin.doctor_rehearsal:run_rehearsal",
        ),
        BackendInfo(
            "procs",
            "a real kube-apiserver per candidate with hollow nodes as local processes (no docker)",
            "procs.backend",
            "ProcsBackend",
            ("git",),
            "bisector.backends.procs.checks:check",
            revisions="bisector.backends.procs.revisions:revisions",
        ),
    )
}

DEFAULT_BACKEND = "sim"


def _function(module: str, function: str) -> object:
    return getattr(importlib.import_module(module), function)


def backend_names() -> str:
    """`sim, local, kind, gce or procs`, for help texts and errors."""
    names = list(BACKENDS)
    return ", ".join(names[:-1]) + " or " + names[-1]


def backend_info(name: str) -> BackendInfo:
    try:
        return BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(f"unknown backend {name!r}; choose one of: {known}") from None


def create_backend(name: str, context: BackendContext) -> Backend:
    return backend_info(name).create(context)
