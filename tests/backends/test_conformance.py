"""Every registered backend keeps the one contract (bisector/backends/base.py), on its fakes.

Parametrized over `BACKENDS`: a backend added to the registry is tested here with nothing
to list by hand, once it has a maker below (a missing maker fails, saying so). Each
backend is built from a config its own tests use; external programs are the recording
FakeProc (tests/helpers/fake_proc.py), the procs backend's are the fake Kubernetes
programs (tests/helpers/fake_kube.py).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bisector.backends.base import (
    Backend,
    BackendContext,
    Candidate,
    ForwardingBackend,
    PartialLogs,
    PrefetchBuilds,
    ReportsAdaptations,
    capability,
)
from bisector.backends.gce.backend import SERVER_TARBALL
from bisector.backends.registry import BACKENDS, create_backend
from bisector.config import Section
from bisector.demo_repo import PROFILE_PATH
from bisector.errors import LaunchError
from bisector.measure.evaluation import evaluate_candidate
from bisector.measure.parallel import CancellableBackend
from bisector.nightly.budget import BudgetedBackend
from bisector.nightly.config import Budget
from bisector.sim import SimProfile, render_profile
from tests.helpers.fake_proc import FakeProc
from tests.helpers.procs_backend import make_world

COMMIT = "f93a270edcefc3780247ae89eea02cd13b81237b"
Maker = Callable[[Path], Backend]


def _make(name: str, data: dict[str, object], root: Path, warmup_s: float = 60.0) -> Backend:
    section = Section(data, "conformance.toml", f"backends.{name}")
    return create_backend(name, BackendContext(section, root / "run", warmup_s, seed=1))


def _gce(root: Path) -> Backend:
    base = root / "base-checkout"
    (base / SERVER_TARBALL).parent.mkdir(parents=True)
    (base / SERVER_TARBALL).write_text("release\n")
    data: dict[str, object] = {
        "project": "p",
        "base_checkout": str(base),
        "build_cache_dir": str(root / "cache"),
    }
    return _make("gce", data, root, 1800.0)


def _procs(root: Path) -> Backend:
    return _make("procs", make_world(root / "world").data(), root)


SIM: dict[str, object] = {"nodes": 10, "duration": "1m", "profile": PROFILE_PATH}
MAKERS: dict[str, Maker] = {
    "sim": lambda root: _make(
        "sim", {"nodes": 10, "duration": "1m", "profile": PROFILE_PATH}, root
    ),
    "local": lambda root: _make("local", {"launch": "true", "collect": "true"}, root),
    "kind": lambda root: _make("kind", {"hollow_nodes": 50}, root, 600.0),
    "gce": _gce,
    "procs": _procs,
}

WRAPPERS: dict[str, Callable[[Backend], Backend]] = {
    "budget": lambda b: BudgetedBackend(b, Budget()),
    "slot": lambda b: CancellableBackend(b, threading.Event()),
    "slot over budget": lambda b: CancellableBackend(
        BudgetedBackend(b, Budget()), threading.Event()
    ),
}

CAPABILITIES: tuple[type, ...] = (PartialLogs, PrefetchBuilds, ReportsAdaptations)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name = str(request.param)
    assert name in MAKERS, f"backend {name} has no maker in tests/backends/test_conformance.py"
    return MAKERS[name](tmp_path)


def _candidate(root: Path) -> Candidate:
    worktree = root / "wt"
    worktree.mkdir(exist_ok=True)
    return Candidate(COMMIT, worktree, root / "run" / "evals" / "1", launch_id="l1")


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_every_capability_and_trait_survives_every_wrapper(backend: Backend, wrap: str) -> None:
    """The nightly hunt's bug (issue 27): `isinstance(BudgetedBackend(procs), PartialLogs)`
    was False, so hunts ran without early verdicts and prefetched builds."""
    wrapped = WRAPPERS[wrap](backend)
    for proto in CAPABILITIES:
        has = isinstance(backend, proto)
        assert (capability(wrapped, proto) is not None) == has, proto.__name__
        assert (capability(backend, proto) is not None) == has, proto.__name__
    assert wrapped.traits == backend.traits
    assert wrapped.name == backend.name


def test_a_wrapper_claims_no_capability_its_backend_lacks(tmp_path: Path) -> None:
    """A ForwardingBackend has every capability's methods; `capability` must still say no
    for a backend without them (local: no prefetch, no adaptations)."""
    local = MAKERS["local"](tmp_path)
    assert capability(BudgetedBackend(local, Budget()), PrefetchBuilds) is None
    assert capability(BudgetedBackend(local, Budget()), ReportsAdaptations) is None


def test_the_backends_that_hunts_rely_on_have_both_capabilities(tmp_path: Path) -> None:
    """sim and procs can end warmups early and build ahead (their modules say so)."""
    for name in ("sim", "procs"):
        wrapped = BudgetedBackend(MAKERS[name](tmp_path / name), Budget())
        assert capability(wrapped, PartialLogs) is not None, name
        assert capability(wrapped, PrefetchBuilds) is not None, name


def test_plan_has_no_side_effects(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--dry-run prints the plan: it runs nothing and writes nothing."""
    candidate = _candidate(tmp_path)
    fake = FakeProc.install(monkeypatch)

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"plan started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    before = _files(tmp_path)
    lines = backend.plan(candidate)
    assert lines and all(isinstance(line, str) for line in lines)
    assert fake.calls == []
    assert _files(tmp_path) == before


class _FailingLaunch(ForwardingBackend):
    """The backend, whose launch fails before it starts anything; counts teardowns."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.teardowns = 0

    def build(self, candidate: Candidate) -> None:
        pass  # a build is not what this checks (and would need a tree per backend)

    def launch(self, candidate: Candidate) -> None:
        raise LaunchError("no cluster today")

    def teardown(self, candidate: Candidate) -> None:
        self.teardowns += 1
        super().teardown(candidate)


def test_a_failed_launch_is_torn_down_exactly_once_and_is_a_skip(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend's own teardown, after a launch that made nothing, runs once and does
    not fail (nothing to tear down is not an error); the evaluation is a skip."""
    FakeProc.install(monkeypatch)
    failing = _FailingLaunch(backend)
    m = evaluate_candidate(
        failing, _candidate(tmp_path), metric="conflicts", tree="t", phase="bisect",
        launch_attempts=1,
    )  # fmt: skip
    assert failing.teardowns == 1
    assert m.value is None and (m.reason or "").startswith("launch:"), m.reason
    assert m.teardown_error is None


def test_collect_writes_under_the_log_dir(tmp_path: Path) -> None:
    """What `collect` returns lies under candidate.log_dir (the sim, run for real)."""
    sim = MAKERS["sim"](tmp_path)
    candidate = _candidate(tmp_path)
    (candidate.worktree / "hack").mkdir()
    (candidate.worktree / PROFILE_PATH).write_text(render_profile(SimProfile()))
    sim.build(candidate)
    sim.launch(candidate)
    sim.warmup(candidate)
    logs = sim.collect(candidate)
    sim.teardown(candidate)
    assert logs
    for log in logs:
        assert log.is_file() and log.resolve().is_relative_to(candidate.log_dir.resolve())
