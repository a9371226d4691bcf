"""The hunt budget: evaluations and cluster time, counted across nights, checked before a build."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.nightly.budget import BudgetedBackend, BudgetExceeded
from bisector.nightly.config import Budget
from tests.helpers.fake_backends import FileValueBackend


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def candidate(tmp_path: Path, n: int) -> Candidate:
    worktree = tmp_path / "wt"
    worktree.mkdir(exist_ok=True)
    (worktree / "value").write_text("10")
    return Candidate(f"{n:040x}", worktree, tmp_path / f"eval-{n}")


def evaluate(backend: BudgetedBackend, cand: Candidate, clock: Clock, hours: float) -> None:
    backend.build(cand)
    backend.launch(cand)
    clock.now += hours * 3600
    backend.warmup(cand)
    backend.collect(cand)
    backend.teardown(cand)


def test_cluster_hours_stop_the_next_build_and_usage_is_recorded(tmp_path: Path) -> None:
    clock, recorded = Clock(), []
    inner = FileValueBackend()
    backend = BudgetedBackend(
        inner,
        Budget(cluster_hours=1.0),
        evaluations=3,
        cluster_s=0.25 * 3600,  # an earlier night's share
        record=lambda e, s: recorded.append((e, s)),
        clock=clock,
    )
    evaluate(backend, candidate(tmp_path, 1), clock, 0.5)
    assert backend.exceeded() is None
    evaluate(backend, candidate(tmp_path, 2), clock, 0.5)

    with pytest.raises(BudgetExceeded, match=r"1 cluster-hours used up"):
        backend.build(candidate(tmp_path, 3))

    assert ("build", f"{3:040x}") not in inner.steps, "no evaluation starts past the budget"
    assert backend.evaluations == 5
    assert recorded == [(1, 0.0), (0, 1800.0), (1, 0.0), (0, 1800.0)]


def test_evaluation_limit_counts_earlier_nights(tmp_path: Path) -> None:
    clock = Clock()
    backend = BudgetedBackend(FileValueBackend(), Budget(evaluations=3), evaluations=2, clock=clock)
    evaluate(backend, candidate(tmp_path, 1), clock, 0.1)
    with pytest.raises(BudgetExceeded, match="3 evaluations"):
        backend.build(candidate(tmp_path, 2))


def test_launch_retries_count_each_cluster_up_time(tmp_path: Path) -> None:
    clock = Clock()
    backend = BudgetedBackend(FileValueBackend(), Budget(), clock=clock)
    cand = candidate(tmp_path, 1)
    backend.build(cand)
    backend.launch(cand)
    clock.now += 600
    backend.teardown(cand)  # between launch attempts
    clock.now += 300  # nothing is up while waiting to retry
    backend.launch(cand)
    clock.now += 900
    backend.teardown(cand)
    backend.teardown(cand)  # a crash clean-up tearing down again adds nothing
    assert backend.cluster_s == 1500
    assert backend.exceeded() is None  # no limits: never exceeded
