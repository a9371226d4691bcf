"""The protocol every backend implements, and what it is handed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, cast, runtime_checkable

from bisector.config import Section
from bisector.report.adaptation import Adaptation


@dataclass(frozen=True)
class Candidate:
    """One evaluation of one commit, in one parallel slot."""

    commit: str  # full hash
    worktree: Path  # checkout of `commit` owned by the tool
    eval_dir: Path  # this evaluation's directory inside the run directory
    slot: int = 0  # parallel slot: backends derive cluster names from it
    # This evaluation's launch id: a log naming it (`bisector-launch-id=<id>`) shows it is
    # this launch's (bisector.measure.provenance.WindowRule); the local backend exports it.
    launch_id: str = ""

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
    # `[run] check_every` when the run looks at the growing log (a watchable metric): a
    # backend that can judge a load only over a minimum window refuses looks before it.
    check_every_s: float | None = None


@dataclass(frozen=True)
class BackendTraits:
    """What a backend is, declared once by each backend (a class attribute, or a property
    when its configuration decides): the run reads these, never attributes by name."""

    # Each evaluation's log is made fresh into its own directory (the sim): it cannot be
    # another launch's, whatever its clock says (bisector.measure.provenance.WindowRule).
    own_logs: bool = False
    # The log's times are this machine's wall clock (procs): a log must cover the run.
    real_time_logs: bool = False
    # The warmup waits `[run] warmup`; False when something else sets its length (a
    # workload's own run, kind and local), so no log is held to `[run] warmup`.
    waits_warmup: bool = True
    # The warmup's own length when it is not `[run] warmup` (the sim's simulated duration);
    # None: `[run] warmup`. Early verdicts pace their looks by it.
    warmup_s: float | None = None


class Backend(Protocol):
    """build -> launch -> warmup -> collect -> teardown, once per candidate.

    Failures raise `bisector.errors.InfraError` subclasses (BuildError, LaunchError,
    CollectError); the caller turns them into *skip* and always calls `teardown`
    once `launch` was attempted. `setup`/`close` bracket a whole bisection (e.g. a
    GCE base cluster kept across candidates).
    """

    name: str

    @property
    def traits(self) -> BackendTraits: ...

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


# -- optional capabilities: asked for with `capability(backend, Proto)`, never isinstance --


@runtime_checkable
class PartialLogs(Protocol):
    """A backend that can show the apiserver log while the cluster warms up (early verdicts).

    `warmup_steps` replaces `warmup` when the run checks the log as it grows: it
    yields the cluster time elapsed after each `every_s` (the last yield is the whole
    warmup); the caller stops iterating (and closes the iterator) to end the warmup
    there, then calls `collect` as usual, which returns the log up to that moment.
    `peek` returns the log so far (the same file growing, or a fresh copy), without
    disturbing the run; it raises CollectError when it cannot read it right now (the
    run then simply waits for the full warmup).
    """

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]: ...

    def peek(self, candidate: Candidate) -> list[Path]: ...


def sleep_steps(sleep: Callable[[float], None], total_s: float, every_s: float) -> Iterator[float]:
    """`warmup_steps` for a backend whose warmup is waiting `total_s` (local, kind, gce)."""
    elapsed = 0.0
    every_s = max(every_s, 1e-3)
    while elapsed < total_s:
        step = min(every_s, total_s - elapsed)
        sleep(step)
        elapsed += step
        yield elapsed


@runtime_checkable
class ReportsAdaptations(Protocol):
    """A backend that adds steps to what the candidate's own scripts do (the gce backend on
    2026 GCP): `adaptations()` says which and why, for the report."""

    def adaptations(self) -> list[Adaptation]: ...


@runtime_checkable
class PrefetchBuilds(Protocol):
    """A backend that can build a commit ahead of its evaluation (while a cluster warms up).

    `prefetch_build(commit, worktree)` builds the checkout in `worktree` (the tool's own,
    not a slot's) into the backend's build cache; the later `build` of a candidate with
    the same tree takes it from there. It raises InfraError (BuildError) when the build
    fails: the evaluation then builds again itself, so a failed prefetch is never a verdict.
    `prefetched(commit)` says whether a finished prefetch is waiting for `commit`.
    """

    def prefetch_build(self, commit: str, worktree: Path) -> None: ...

    def prefetched(self, commit: str) -> bool: ...


P = TypeVar("P")


class ForwardingBackend:
    """A backend around another (a slot's cancellable view, a nightly hunt's budget): every
    step, trait and capability forwards to `inner`, so what the backend can do survives
    the wrapping. Subclasses override the steps they watch.

    It has every capability's methods, so `isinstance(wrapper, PartialLogs)` would say
    yes of any wrapper: ask `capability(wrapper, PartialLogs)`, which says what `inner`
    has (and hands back the wrapper, so a subclass still sees those calls).
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name

    @property
    def traits(self) -> BackendTraits:
        return self.inner.traits

    def setup(self) -> None:
        self.inner.setup()

    def build(self, candidate: Candidate) -> None:
        self.inner.build(candidate)

    def launch(self, candidate: Candidate) -> None:
        self.inner.launch(candidate)

    def warmup(self, candidate: Candidate) -> None:
        self.inner.warmup(candidate)

    def collect(self, candidate: Candidate) -> list[Path]:
        return self.inner.collect(candidate)

    def teardown(self, candidate: Candidate) -> None:
        self.inner.teardown(candidate)

    def close(self) -> None:
        self.inner.close()

    def plan(self, candidate: Candidate) -> list[str]:
        return self.inner.plan(candidate)

    # -- the capabilities, forwarded (only reached through `capability`) --

    def _inner(self, proto: type[P]) -> P:
        found = capability(self.inner, proto)
        if found is None:  # `capability` said no: nothing calls this then
            raise TypeError(f"the {self.name} backend has no {proto.__name__}")
        return found

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        return self._inner(PartialLogs).warmup_steps(candidate, every_s)

    def peek(self, candidate: Candidate) -> list[Path]:
        return self._inner(PartialLogs).peek(candidate)

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        self._inner(PrefetchBuilds).prefetch_build(commit, worktree)

    def prefetched(self, commit: str) -> bool:
        return self._inner(PrefetchBuilds).prefetched(commit)

    def adaptations(self) -> list[Adaptation]:
        return self._inner(ReportsAdaptations).adaptations()


def capability(backend: Backend, proto: type[P]) -> P | None:
    """`backend` as a `proto` (PartialLogs, PrefetchBuilds, ReportsAdaptations) if the
    backend it wraps, however deeply, has it; else None. A wrapper is handed back as
    itself: it forwards the calls (ForwardingBackend)."""
    if isinstance(backend, ForwardingBackend):
        return cast("P", backend) if capability(backend.inner, proto) is not None else None
    return backend if isinstance(backend, proto) else None
