"""Measuring commits: one evaluation per call, journaled before it counts.

The evaluator only measures: it checks a candidate out into its slot's worktree,
runs `evaluate_candidate`, journals the measurement and hands it back. It holds no
search state: the searches (plain, posterior) decide what to measure and what the
measurements mean. Parallel slots call `measure` for different commits at once;
the lock serializes what they share (journal, worktree bookkeeping, progress),
never the evaluations themselves. `batch` runs up to `slots` evaluations at once.

Teardown always finishes: it runs with signals held (see bisector.signals), a
`cleaned` record is journaled only after it succeeded, and a failed one is said
loudly, journaled (`teardown_failed`) and kept for the next run and `bisector cleanup`.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bisector import proc
from bisector.backends.base import Backend, Candidate
from bisector.bisection.layout import RunLayout
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.search.base import Job
from bisector.search.decide import Decision, DecisionRule
from bisector.search.journal import (
    Begin,
    Cleaned,
    Journal,
    Mark,
    TeardownFailed,
    read_journal,
)
from bisector.search.measure import Measurement, Scorer, WindowRule, evaluate_candidate
from bisector.search.parallel import CancellableBackend, run_concurrently
from bisector.search.progress import Progress
from bisector.signals import held_during

T = TypeVar("T")


@dataclass(frozen=True)
class MeasureSettings:
    metric: str
    launch_attempts: int = 3
    retry_wait_s: float = 0.0
    warmup_s: float = 0.0  # a log should cover (most of) this
    real_time_logs: bool = False  # the backend's logs carry wall-clock time


class Evaluator:
    """Measures commits: journal first; nothing here decides what they mean."""

    def __init__(
        self,
        *,
        settings: MeasureSettings,
        repo: GitRepo,
        journal: Journal,
        backend: Backend,
        layout: RunLayout,
        progress: Progress,
        scorer: Scorer,
        slots: int = 1,
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.journal = journal
        self.backend = backend
        self.layout = layout
        self.progress = progress
        self.scorer = scorer
        self.slots = max(1, slots)
        self.used: dict[str, Measurement] = {}  # every measurement the report rests on
        self.worktrees: set[Path] = set()
        self.rounds: Counter[str] = Counter()  # phase -> rounds of concurrent evaluations
        self.teardown_failures: list[TeardownFailed] = []
        self.reference_span_s: float | None = None  # what the endpoints' logs covered
        self.lock = threading.RLock()
        self.cancelled = threading.Event()
        self._in_flight: dict[int, Candidate] = {}  # slot -> candidate being evaluated
        self._tearing_down: set[int] = set()
        self._slot_runs: Counter[int] = Counter()
        self._steps_left: int | None = None
        self._begun = len(journal.of_kind(Begin))

    # -- what the searches call ---------------------------------------------------

    def expect(self, steps_left: int | None) -> None:
        """The search's estimate of the steps left, for the progress line."""
        self._steps_left = steps_left

    def window_rule(self) -> WindowRule:
        expected = max(self.settings.warmup_s, self.reference_span_s or 0.0)
        return WindowRule(expected, self.settings.real_time_logs)

    def measure(self, job: Job, slot: int = 0) -> Measurement:
        worktree = self.layout.slot_worktree(slot)
        tree = self.repo.tree_of(job.commit)
        with self.lock:
            self.worktrees.add(worktree)
            try:
                self.repo.add_worktree(worktree, job.commit)
            except InfraError as exc:  # e.g. objects missing in a mirror: this commit skips
                return self._unchecked_out(job, tree, slot, exc.reason)
            self._begun += 1
            eval_dir = self.layout.eval_dir(self._begun, job.commit)
            candidate = Candidate(job.commit, worktree, eval_dir, slot)
            self.journal.write(Begin(job.commit, slot, str(eval_dir), job.why))
            self._in_flight[slot] = candidate
            self._slot_runs[slot] += 1
            self.progress.status(f"{job.phase}: evaluating", job.commit, self._steps_left)
        m = evaluate_candidate(
            CancellableBackend(self.backend, self.cancelled),
            candidate,
            metric=self.settings.metric,
            tree=tree,
            phase=job.phase,
            launch_attempts=self.settings.launch_attempts,
            retry_wait_s=self.settings.retry_wait_s,
            scorer=self.scorer,
            window=self.window_rule(),
            why=job.why,
            teardown=self._teardown,
        )
        with self.lock:
            self._in_flight.pop(slot, None)
            if m.teardown_error is not None:
                self._teardown_failed(candidate, m.teardown_error)
            if self.cancelled.is_set():
                # Torn down, but not a measurement: the resumed run measures it again.
                if m.teardown_error is None:
                    self.journal.write(Cleaned(str(eval_dir)))
                raise KeyboardInterrupt
            self.journal.add(m)
            shown = "no value" if m.value is None else f"{self.settings.metric}={m.value:g}"
            why = f" ({m.reason})" if m.reason else ""
            self.progress.note(
                f"measured {job.commit[:12]} [{job.phase}]: {shown}{why} in {m.duration_s:g}s"
            )
        return m

    def _unchecked_out(self, job: Job, tree: str, slot: int, why: str) -> Measurement:
        """A commit git could not check out: a skip with the reason, nothing launched."""
        m = Measurement(job.commit, tree, job.phase, reason=f"checkout: {why}", slot=slot)
        m.started_at = time.time()
        m.why = job.why
        self.journal.add(m)
        self.progress.note(f"measured {job.commit[:12]} [{job.phase}]: no value ({m.reason})")
        return m

    def batch(self, jobs: Sequence[Job]) -> list[Measurement]:
        """One fresh run per job, `slots` at a time (one round per `slots` jobs)."""
        out: list[Measurement] = []
        for start in range(0, len(jobs), self.slots):
            chunk = jobs[start : start + self.slots]

            def task(slot: int, job: Job) -> Measurement:
                m = self.measure(job, slot)
                self.used[m.id] = m
                return m

            tasks = [functools.partial(task, slot, job) for slot, job in enumerate(chunk)]
            out += self.concurrently(tasks, chunk[0].phase)
        return out

    def runs(self, commit: str, phase: str) -> list[Measurement]:
        """The journaled (or cached) runs of `commit` usable in `phase`; they count as used."""
        found = self.journal.for_tree(self.repo.tree_of(commit), confirm=phase == "confirm")
        for m in found:
            self.used[m.id] = m
        return found

    def mark(self, commit: str) -> Mark | None:
        """A person's verdict on `commit` (`bisector mark`), if any: the latest wins."""
        # Read from the file: `bisector mark` may append while this run is going.
        found = [r for r in read_journal(self.journal.path) if isinstance(r, Mark)]
        for record in reversed(found):
            if record.commit == commit:
                return record
        return None

    def measure_n(
        self,
        commits: list[str],
        phase: str,
        n: int,
        spare: Callable[[int], list[Job]] | None = None,
    ) -> list[list[Measurement]]:
        """At least `n` runs of each commit (fewer measured when the journal has some).

        `spare(k)` names up to k jobs for the slots the last round would leave idle
        (speculative search runs beside the endpoints): journaled like any run, they
        reach the search only through the journal.
        """
        found = [self.runs(c, phase) for c in commits]
        # Interleaved (good, bad, good, bad, ...) so parallel slots pair them up.
        missing = [
            Job(c, phase, f"{phase} run {r + 1} of {n}")
            for r in range(n)
            for c, runs in zip(commits, found, strict=True)
            if r >= len(runs)
        ]
        idle = (-len(missing)) % self.slots if missing else 0
        ahead = spare(idle)[:idle] if spare and idle else []
        for m in self.batch(missing + ahead):
            if m.commit in commits and m.phase == phase:
                found[commits.index(m.commit)].append(m)
        return found

    def decide(
        self,
        commit: str,
        threshold: float,
        rule: DecisionRule,
        phase: str,
        *,
        slot: int = 0,
        why: str = "",
    ) -> Decision:
        """Measure `commit` until `rule` decides (journaled runs count first)."""
        marked = self.mark(commit)
        if marked is not None and phase != "confirm":
            note = f": {marked.note}" if marked.note else ""
            return Decision(marked.verdict, f"marked {marked.verdict} by hand{note}")
        while True:
            found = self.runs(commit, phase)
            decision = rule.decide([m.value for m in found], threshold)
            if decision.verdict is not None:
                if decision.verdict == "skip" and found:
                    return Decision("skip", found[-1].reason or decision.reason)
                return decision
            self.measure(Job(commit, phase, why), slot)  # journaled; the next pass sees it

    def decide_all(
        self, commits: list[str], threshold: float, rule: DecisionRule, phase: str, why: str
    ) -> list[Decision]:
        """Decisions on up to `slots` commits, made concurrently (one slot each)."""
        tasks = [
            functools.partial(self.decide, commit, threshold, rule, phase, slot=slot, why=why)
            for slot, commit in enumerate(commits)
        ]
        return self.concurrently(tasks, phase)

    def set_reference(self, runs: list[Measurement]) -> None:
        """The endpoints' logs set what every later log must cover."""
        spans = [m.span_s for m in runs if m.value is not None and m.span_s is not None]
        if spans:
            self.reference_span_s = float(statistics.median(spans))

    # -- rounds, teardown, crashes --------------------------------------------------

    def concurrently(self, tasks: Sequence[Callable[[], T]], phase: str) -> list[T]:
        """One round: task i runs in slot i, all at once."""
        self._slot_runs.clear()
        try:
            return run_concurrently(tasks, self.cancelled, self._abandon, self._is_tearing_down)
        finally:
            # A slot deciding by repeats measures several times in a row: that many rounds.
            self.rounds[phase] += max(self._slot_runs.values(), default=0)

    def _is_tearing_down(self, slot: int) -> bool:
        with self.lock:
            return slot in self._tearing_down

    def _teardown(self, candidate: Candidate) -> None:
        """The backend's teardown, run to its end whatever signal arrives meanwhile."""
        with self.lock:
            self._tearing_down.add(candidate.slot)
        try:
            with held_during(f"the teardown of {candidate.commit[:12]}"), proc.protected():
                self.backend.teardown(candidate)
        finally:
            with self.lock:
                self._tearing_down.discard(candidate.slot)

    def _teardown_failed(self, candidate: Candidate, error: str) -> None:
        record = TeardownFailed(candidate.commit, str(candidate.eval_dir), error)
        self.journal.write(record)
        self.teardown_failures.append(record)
        self.progress.note(
            f"TEARDOWN FAILED for {candidate.commit[:12]}: {error}; something may still be "
            f"running: bisector cleanup --run-dir {self.layout.root}"
        )

    def _tear_down_now(self, candidate: Candidate) -> None:
        try:
            self._teardown(candidate)
        except InfraError as exc:
            with self.lock:
                self._teardown_failed(candidate, exc.reason)
            return
        with self.lock:
            self.journal.write(Cleaned(str(candidate.eval_dir)))

    def _abandon(self, slot: int) -> None:
        """Tear down a slot that did not stop in time after an interrupt."""
        with self.lock:
            candidate = self._in_flight.pop(slot, None)
        if candidate is not None:
            self._tear_down_now(candidate)

    def clean_up_after_crash(self) -> None:
        """Tear down what a killed run left up (a cluster costs money), before anything else."""
        for begun in self.journal.unfinished():
            worktree = self.layout.slot_worktree(begun.slot)
            self.worktrees.add(worktree)
            self.progress.note(
                f"tearing down {begun.commit[:12]}, left up by a killed run or a failed teardown"
            )
            self.repo.add_worktree(worktree, begun.commit)
            candidate = Candidate(begun.commit, worktree, Path(begun.eval_dir), begun.slot)
            self._tear_down_now(candidate)
