"""Teardowns that always finish: signals held, journaled only once done, failures kept.

A `cleaned` record is journaled only after a teardown succeeded; a failed one is said
loudly, journaled (`teardown_failed`) and kept for the next run and `bisector cleanup`.
The slots in flight are tracked here, so an interrupt can tear down a slot that did not
stop in time (`abandon`) and wait to the end for one already in its teardown.
"""

from __future__ import annotations

import threading
from pathlib import Path

from bisector import proc
from bisector.backends.base import Backend, Candidate, ForwardingBackend
from bisector.errors import InfraError
from bisector.measure.journal import Cleaned, Journal, TeardownFailed
from bisector.search.progress import Progress
from bisector.signals import held_during

# Every command of a launch carries its id (the local backend exports it): what still
# carries it after the teardown is that launch's leftover.
LAUNCH_ENV = "BISECTOR_LAUNCH_ID"


class Teardowns:
    """The evaluator's teardowns and the candidates in flight, under its lock."""

    def __init__(
        self,
        *,
        backend: Backend,
        journal: Journal,
        progress: Progress,
        lock: threading.RLock,
        run_dir: Path,
    ) -> None:
        self.backend = backend
        self.journal = journal
        self.progress = progress
        self.lock = lock
        self.run_dir = run_dir
        self.in_flight: dict[int, Candidate] = {}  # slot -> candidate being evaluated
        self._tearing_down: set[int] = set()

    def commits_in_flight(self) -> set[str]:
        with self.lock:
            return {c.commit for c in self.in_flight.values()}

    def is_tearing_down(self, slot: int) -> bool:
        with self.lock:
            return slot in self._tearing_down

    def run(self, candidate: Candidate) -> None:
        """The backend's teardown, run to its end whatever signal arrives meanwhile."""
        with self.lock:
            self._tearing_down.add(candidate.slot)
        try:
            with held_during(f"the teardown of {candidate.commit[:12]}"), proc.protected():
                self.backend.teardown(candidate)
                left = proc.stop_marked(LAUNCH_ENV, candidate.launch_id)
            if left:
                self.progress.note(
                    f"the teardown of {candidate.commit[:12]} left {len(left)} of its launch's "
                    f"processes running (daemons its commands started?): stopped {', '.join(left)}"
                )
        finally:
            with self.lock:
                self._tearing_down.discard(candidate.slot)

    def finishing(self) -> Backend:
        """The backend as an evaluation drives it: its teardown is `run`'s."""
        return _FinishingTeardown(self.backend, self)

    def failed(self, candidate: Candidate, error: str) -> None:
        record = TeardownFailed(candidate.commit, str(candidate.eval_dir), error)
        self.journal.write(record)
        self.progress.note(
            f"TEARDOWN FAILED for {candidate.commit[:12]}: {error}; something may still be "
            f"running: bisector cleanup --run-dir {self.run_dir}"
        )

    def now(self, candidate: Candidate) -> None:
        """Tear down and journal the outcome (a crash's leftovers, an abandoned slot)."""
        try:
            self.run(candidate)
        except InfraError as exc:
            with self.lock:
                self.failed(candidate, exc.reason)
            return
        with self.lock:
            self.journal.write(Cleaned(str(candidate.eval_dir)))

    def abandon(self, slot: int) -> None:
        """Tear down a slot that did not stop in time after an interrupt."""
        with self.lock:
            candidate = self.in_flight.pop(slot, None)
        if candidate is not None:
            self.now(candidate)


class _FinishingTeardown(ForwardingBackend):
    """A backend whose teardown runs to its end whatever signal arrives (Teardowns.run)."""

    def __init__(self, inner: Backend, teardowns: Teardowns) -> None:
        super().__init__(inner)
        self.teardowns = teardowns

    def teardown(self, candidate: Candidate) -> None:
        self.teardowns.run(candidate)
