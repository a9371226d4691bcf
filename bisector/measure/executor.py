"""Where one evaluation runs: the seam between measuring a commit and running its steps.

The Evaluator hands each evaluation of a slot to an `Executor`. The local one runs
`evaluate_candidate` in this process, as every run always did; another (a Kubernetes
Job, bisector.executors.kubernetes) runs the same driver somewhere else and hands back
the same typed `Measurement`. The search, the journal, the confirmation and the report
never learn where an evaluation ran.
"""

from __future__ import annotations

from typing import Protocol

from bisector.backends.base import Backend, Candidate
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement


class Executor(Protocol):
    """Runs one evaluation (build, launch, warmup, collect, score, teardown) of a candidate.

    `evaluate` has `evaluate_candidate`'s contract: an infrastructure failure is a
    measurement with no value and a reason (a skip), never a verdict; the teardown of
    whatever it started is done before it returns or raises; `hooks.nothing_up()` says
    nothing of it can be left up.
    """

    name: str

    @property
    def checks_out(self) -> bool:
        """Whether the evaluation runs in the slot's checkout on this machine (local):
        otherwise the driving process makes none."""
        ...

    @property
    def builds_ahead(self) -> bool:
        """Whether builds ahead (`[run] prefetch_builds`) can serve its evaluations: a
        build made in this process serves only evaluations run in this process."""
        ...

    def driving(self, backend: Backend) -> Backend:
        """The backend as the driving process holds it (its setup, teardown, close)."""
        ...

    def evaluate(
        self,
        backend: Backend,
        candidate: Candidate,
        settings: EvaluationSettings,
        hooks: EvaluationHooks,
    ) -> Measurement: ...

    def left_by_a_crash(self, candidate: Candidate) -> str | None:
        """An evaluation a killed run began and never finished: None to tear it down now
        (the backend's teardown), or what the executor does with it instead (a Job still
        running is adopted by the evaluation that asks for its commit again)."""
        ...


class LocalExecutor:
    """Every evaluation in this process, in the slot's checkout (each slot a thread)."""

    name = "local"
    checks_out = True
    builds_ahead = True

    def driving(self, backend: Backend) -> Backend:
        return backend

    def evaluate(
        self,
        backend: Backend,
        candidate: Candidate,
        settings: EvaluationSettings,
        hooks: EvaluationHooks,
    ) -> Measurement:
        return evaluate_candidate(backend, candidate, settings, hooks)

    def left_by_a_crash(self, candidate: Candidate) -> str | None:
        return None


LOCAL = LocalExecutor()
