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
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.parallel import CancellableBackend
from bisector.nightly.budget import BudgetedBackend
from bisector.nightly.config import Budget
from bisector.sim import SimProfile, render_profile
from bisector.sim.demo_repo import PROFILE_PATH
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
    assert name in MAKERS, f"backend {name} has no maker in tests/backends/test_base_conformance.py"
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


# How each backend's own launch fails on its fakes: without a build (its outputs are
# missing), or a launch command failing.
LAUNCH_FAILS: dict[str, Callable[[FakeProc], object]] = {
    "sim": lambda fake: None,  # no built profile: "build first"
    "kind": lambda fake: None,  # "launch before build"
    "procs": lambda fake: None,  # "launch before build"
    "local": lambda fake: fake.on("bash -c", code=1, stderr="no cluster today"),
    "gce": lambda fake: fake.on("start-kubemark", code=1, stderr="no cluster today"),
}


class _Unbuilt(ForwardingBackend):
    """The backend without its build (it would need a tree per backend); counts teardowns."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.teardowns = 0

    def build(self, candidate: Candidate) -> None:
        pass

    def teardown(self, candidate: Candidate) -> None:
        self.teardowns += 1
        super().teardown(candidate)


def test_a_failed_launch_is_torn_down_exactly_once_and_is_a_skip(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend's own launch fails (a LaunchError, never another exception); its
    teardown then runs once and does not fail (nothing up is not an error)."""
    fake = FakeProc.install(monkeypatch)
    assert backend.name in LAUNCH_FAILS, f"no way to fail {backend.name}'s launch here"
    LAUNCH_FAILS[backend.name](fake)
    unbuilt = _Unbuilt(backend)
    m = evaluate_candidate(
        unbuilt,
        _candidate(tmp_path),
        EvaluationSettings("conflicts", phase="bisect", tree="t", launch_attempts=1),
    )
    assert unbuilt.teardowns == 1
    assert m.value is None and m.skipped_at == "launch", m.reason
    assert m.teardown_error is None


def _sim_tree(candidate: Candidate) -> None:
    (candidate.worktree / "hack").mkdir()
    (candidate.worktree / PROFILE_PATH).write_text(render_profile(SimProfile()))


# Backends whose whole evaluation runs here for real: the sim's model, local's commands.
COLLECTED: dict[str, tuple[Maker, Callable[[Candidate], None]]] = {
    "sim": (MAKERS["sim"], _sim_tree),
    "local": (
        lambda root: _make(
            "local", {"launch": "true", "collect": 'echo "$BISECTOR_LAUNCH_ID" > "$BISECTOR_LOG"'},
            root, 0.0,  # no warmup to wait
        ),
        lambda candidate: None,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(COLLECTED))
def test_collect_writes_under_the_log_dir(name: str, tmp_path: Path) -> None:
    """What `collect` returns lies under candidate.log_dir, and nothing it wrote is
    elsewhere in the candidate's worktree."""
    make, prepare = COLLECTED[name]
    backend = make(tmp_path)
    candidate = _candidate(tmp_path)
    prepare(candidate)
    tree_before = _files(candidate.worktree)
    backend.build(candidate)
    backend.launch(candidate)
    backend.warmup(candidate)
    logs = backend.collect(candidate)
    backend.teardown(candidate)
    assert logs
    for log in logs:
        assert log.is_file() and log.resolve().is_relative_to(candidate.log_dir.resolve())
    assert _files(candidate.worktree) == tree_before
