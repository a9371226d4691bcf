"""A hunt's budget, enforced by wrapping its backend (bisector.search is not changed for it).

`BudgetedBackend` forwards every call to the real backend (a ForwardingBackend: its
traits and capabilities too, so a hunt keeps early verdicts and prefetched builds).
Before each build it checks the hunt's usage so far (evaluations started, cluster time from launch
to teardown, summed over every night of the hunt) and raises `BudgetExceeded`
instead of starting one more evaluation. That exception is neither an
InfraError (which would become a *skip*) nor a BisectorError: it unwinds
`run_bisection` through its `finally` blocks (worktrees removed, backend
closed) to the nightly, which reports the regression as not bisected.
Usage is written to the database as it happens, so a crash loses none of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bisector.backends.base import Backend, Candidate, ForwardingBackend
from bisector.nightly.config import Budget


class BudgetExceeded(Exception):  # a stop signal, not an error
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def budget_exceeded(budget: Budget, evaluations: int, cluster_s: float) -> str | None:
    """Why a hunt that used this much may start no further evaluation, or None."""
    limit = budget.evaluations
    if limit is not None and evaluations >= limit:
        return f"budget of {limit} evaluations used up"
    hours = budget.cluster_hours
    if hours is not None and cluster_s >= hours * 3600:
        return f"budget of {hours:g} cluster-hours used up ({cluster_s / 3600:.3g} h of clusters)"
    return None


UsageSink = Callable[[int, float], None]  # (evaluations, cluster seconds) to add


class BudgetedBackend(ForwardingBackend):
    """The hunt's backend, stopping before an evaluation the budget does not cover."""

    def __init__(
        self,
        inner: Backend,
        budget: Budget,
        *,
        evaluations: int = 0,
        cluster_s: float = 0.0,
        record: UsageSink | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(inner)
        self.budget = budget
        self.evaluations = evaluations
        self.cluster_s = cluster_s
        self._record = record
        self._clock = clock
        self._up_since: dict[Path, float] = {}

    def exceeded(self) -> str | None:
        """Why no further evaluation may start, or None."""
        return budget_exceeded(self.budget, self.evaluations, self.cluster_s)

    def _add(self, evaluations: int, cluster_s: float) -> None:
        self.evaluations += evaluations
        self.cluster_s += cluster_s
        if self._record is not None:
            self._record(evaluations, cluster_s)

    def build(self, candidate: Candidate) -> None:
        if (why := self.exceeded()) is not None:
            raise BudgetExceeded(why)
        self._add(1, 0.0)
        self.inner.build(candidate)

    def launch(self, candidate: Candidate) -> None:
        self._up_since[candidate.eval_dir] = self._clock()
        self.inner.launch(candidate)

    def teardown(self, candidate: Candidate) -> None:
        try:
            self.inner.teardown(candidate)
        finally:
            # Launch retries tear down between attempts: each launch..teardown counts.
            since = self._up_since.pop(candidate.eval_dir, None)
            if since is not None:
                self._add(0, self._clock() - since)

    def close(self) -> None:
        self._up_since.clear()
        self.inner.close()
