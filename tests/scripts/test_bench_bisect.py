"""scripts/bench_bisect.py's stand-ins behave like git bisect, and a trial runs the real loop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bisector.gitrepo import BisectSession, GitRepo
from tests.helpers.repo import build_repo

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_bisect.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bisect", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_bisect"] = module
    spec.loader.exec_module(module)
    return module


def test_linear_session_follows_git_bisect(tmp_path: Path) -> None:
    bench = _bench()
    built = build_repo(tmp_path / "repo", [0] * 12)
    commits = built.mainline
    real = BisectSession(GitRepo(built.path), tmp_path / "bisect")
    fake = bench.LinearSession(bench.LinearRepo(commits, tmp_path), tmp_path)
    marks = [(8, "bad"), (10, "bad"), (2, "good"), (5, "skip"), (4, "good"), (6, "bad")]
    for session in (real, fake):
        session.start(commits[0], commits[-1])
    for at, verdict in marks:
        real.mark(commits[at], verdict)
        fake.mark(commits[at], verdict)
        assert real.remaining() == fake.remaining()
        assert (real.first_bad, real.only_skipped_left) == (fake.first_bad, fake.only_skipped_left)
    assert fake.only_skipped_left and set(fake.remaining()) == {commits[5], commits[6]}
    real.close()


def test_a_trial_runs_the_orchestrator_in_memory() -> None:
    bench = _bench()
    noisy = bench.Method("bisector K=1", noise_aware=True)  # one thread: draws are seeded
    outcomes = [bench.run_trial(bench.Cell(64, "flip 0.1"), noisy, seed) for seed in range(3)]
    assert all(o.correct and not o.failed for o in outcomes)
    two = bench.run_trial(bench.Cell(64, "flip 0.1"), bench.METHODS[3], 0)
    assert two.rounds < two.evaluations
    plain = bench.run_trial(bench.Cell(64, "flip 0"), bench.Method("git-bisect"), 0)
    assert plain.correct and plain.evaluations <= 6 + 2 + 2  # log2(64) + endpoints + confirm


@pytest.mark.slow
def test_parallel_trials_repeat_exactly_and_pair_the_fold_with_its_baseline() -> None:
    bench = _bench()
    cell = bench.Cell(64, "flip 0.1")
    folded = bench.Method("K=4", slots=4, noise_aware=True)
    unfolded = bench.Method("K=4 unfolded", slots=4, noise_aware=True, fold=False)
    for seed in range(3):
        # A run's noise depends on (trial, commit, nth run), not on which slot finished first.
        assert bench.run_trial(cell, folded, seed) == bench.run_trial(cell, folded, seed)
    rounds = [
        (bench.run_trial(cell, folded, s).rounds, bench.run_trial(cell, unfolded, s).rounds)
        for s in range(3)
    ]
    assert sum(f for f, _ in rounds) < sum(u for _, u in rounds)
