"""The protocol every backend implements, and what it is handed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bisector.config import Section


@dataclass(frozen=True)
class Candidate:
    """One evaluation of one commit, in one parallel slot."""

    commit: str  # full hash
    worktree: Path  # checkout of `commit` owned by the tool
    eval_dir: Path  # this evaluation's directory inside the run directory
    slot: int = 0  # parallel slot: backends derive cluster names from it

    @property
    def log_dir(self) -> Path:
        """Where `collect` puts the apiserver log file(s)."""
        return self.eval_dir / "logs"


@dataclass(frozen=True)
class BackendContext:
    """Run-level settings a backend is built from."""

    section: Section  # the backend's own table, `[backends.<name>]`
    run_dir: Path
    warmup_s: float = 0.0
    seed: int = 0
    # A checkout of a known-good tree (the good endpoint's worktree): the gce backend
    # brings its base cluster up from it when the config names no `base_checkout`.
    base_worktree: Path | None = None


class Backend(Protocol):
    """build -> launch -> warmup -> collect -> teardown, once per candidate.

    Failures raise `bisector.errors.InfraError` subclasses (BuildError, LaunchError,
    CollectError); the caller turns them into *skip* and always calls `teardown`
    once `launch` was attempted. `setup`/`close` bracket a whole bisection (e.g. a
    GCE base cluster kept across candidates).
    """

    name: str

    def setup(self) -> None: ...

    def build(self, candidate: Candidate) -> None: ...

    def launch(self, candidate: Candidate) -> None: ...

    def warmup(self, candidate: Candidate) -> None: ...

    def collect(self, candidate: Candidate) -> list[Path]: ...

    def teardown(self, candidate: Candidate) -> None: ...

    def close(self) -> None: ...

    def plan(self, candidate: Candidate) -> list[str]:
        """The commands an evaluation would run, for --dry-run."""
        ...


BackendFactory = Callable[[BackendContext], Backend]
