"""Rehearse a gce config on the twin: one whole evaluation with the checkout's real scripts.

`rehearse(section, checkout, home)` installs the twin in `home`, puts it first on
PATH for the duration, and runs the gce backend as `bisector run` would for one
candidate (the checkout's HEAD): setup (kube-up.sh), build (quick-release),
launch (start-kubemark.sh), collect (the log copy), teardown (stop-kubemark.sh),
close (kube-down.sh). It returns what happened: the outcome, every call the
scripts made, the unmodelled ones, and what the twin's project still holds.
`bisector doctor --rehearse` can call it before a config spends money; the
contract tests (`make contract KUBE=...`) do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bisector import proc
from bisector.backends.base import Candidate
from bisector.backends.gce.backend import GceBackend
from bisector.config import Section
from bisector.errors import InfraError
from bisector.report.adaptation import Adaptation
from bisector.settings import RunSettings
from bisector.twin import UNMODELLED_EXIT, TwinConfig, install
from bisector.twin.state import Home

_GIT_TIMEOUT_S = 600.0  # a rev-parse in a local checkout


@dataclass
class Rehearsal:
    home: Home
    commit: str
    status: str = "not run"  # "measured", or the stage that failed
    reason: str = ""
    logs: list[Path] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    leftovers: dict[str, list[str]] = field(default_factory=dict)
    adaptations: list[Adaptation] = field(default_factory=list)  # what the backend added

    @property
    def unmodelled(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["code"] == UNMODELLED_EXIT]

    @property
    def ok(self) -> bool:
        return self.status == "measured" and not self.unmodelled and not self.leftovers

    def steps(self) -> list[str]:
        """Every call the scripts made on the twin, one line each, with its exit code."""
        return [f"{c['code']:>3} {c['tool']} {' '.join(c['argv'])[:200]}" for c in self.calls]


@contextlib.contextmanager
def on_path(home: Home) -> Iterator[None]:
    """The twin's shims first on PATH (for proc.run and every script it starts)."""
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{home.bin}{os.pathsep}{old}"
    try:
        yield
    finally:
        os.environ["PATH"] = old


def rehearse(
    section: Section, checkout: Path, home_dir: Path, twin: TwinConfig | None = None
) -> Rehearsal:
    """One evaluation of `checkout` with `section` ([backends.gce]) on a twin in `home_dir`."""
    checkout = checkout.absolute()
    head = proc.run(["git", "rev-parse", "HEAD"], cwd=checkout, timeout=_GIT_TIMEOUT_S)
    commit = head.stdout.strip()
    project = section.get_str("project", "twin-project")
    home = install(home_dir, replace(twin or TwinConfig(), project=project))
    result = Rehearsal(home, commit)
    run_dir = home.path / "run"
    run = RunSettings("", "", backend="gce", backend_section=section)  # [run]'s defaults
    context = run.backend_context(run_dir, base_worktree=checkout)
    cand = Candidate(commit, checkout, run_dir / "evals" / "rehearsal", 0)
    with on_path(home):
        backend = GceBackend(context, sleep=lambda s: None)
        stage = "setup"
        try:
            backend.setup()
            launched = False
            try:
                stage = "build"
                backend.build(cand)
                stage, launched = "launch", True
                backend.launch(cand)
                stage = "collect"
                result.logs = backend.collect(cand)
                result.status = "measured"
            finally:
                if launched:
                    # A failed teardown keeps its record; the summary reads it from there.
                    with contextlib.suppress(InfraError):
                        backend.teardown(cand)
        except InfraError as exc:
            result.status, result.reason = f"{stage} failed", exc.reason
        finally:
            backend.close()
            result.adaptations = backend.adaptations()
    result.calls = home.calls()
    result.leftovers = home.load().leftovers()
    return result
