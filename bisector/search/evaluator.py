"""Measuring commits for a bisection: one evaluation per call, journaled before it counts.

`Evaluator.verdict(commit, threshold)` is what a strategy's pick becomes: it reuses
journaled (or cached) measurements, measures more while the decision rule asks for
more, and returns good/bad/skip. Each slot has its own worktree, so parallel slots
call `measure` for different commits at once: the lock serializes what they share
(journal, worktree bookkeeping, progress), never the evaluations themselves.
`batch` and `verdicts` run up to `slots` evaluations concurrently (one round).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisector.backends.base import Backend, Candidate
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.logs import score_logs
from bisector.search.decide import DecisionRule
from bisector.search.journal import Journal
from bisector.search.measure import Measurement, Scorer, evaluate_candidate
from bisector.search.options import RunOptions
from bisector.search.parallel import CancellableBackend, run_concurrently
from bisector.search.progress import Progress


class Evaluator:
    """Measures commits for the search: journal first, verdicts only from journaled runs."""

    def __init__(
        self,
        *,
        options: RunOptions,
        repo: GitRepo,
        journal: Journal,
        backend: Backend,
        rule: DecisionRule,
        progress: Progress,
        run_dir: Path,
        scorer: Scorer = score_logs,
    ) -> None:
        self.options = options
        self.repo = repo
        self.journal = journal
        self.backend = backend
        self.rule = rule
        self.progress = progress
        self.run_dir = run_dir
        self.used: dict[str, Measurement] = {}  # every measurement a verdict rested on
        self.verdicts: dict[str, str] = {}
        self.reasons: dict[str, str] = {}
        self.slot_worktrees: set[Path] = set()
        self.steps_left: int | None = None
        self.slots = 1  # commits a strategy may ask for per round
        self.scorer = scorer
        self.lock = threading.RLock()
        self.cancelled = threading.Event()
        self.in_flight: dict[int, Candidate] = {}  # slot -> candidate being evaluated
        self.rounds: Counter[str] = Counter()  # phase -> rounds of concurrent evaluations
        self._slot_runs: Counter[int] = Counter()
        self._begun = sum(r.get("type") == "begin" for r in journal.records)

    def measure(self, commit: str, tree: str, phase: str, slot: int = 0) -> Measurement:
        worktree = self.run_dir / "worktrees" / f"slot-{slot}"
        with self.lock:
            self.slot_worktrees.add(worktree)
            self.repo.add_worktree(worktree, commit)
            self._begun += 1
            eval_dir = self.run_dir / "evals" / f"{self._begun:03d}-{commit[:12]}"
            candidate = Candidate(commit, worktree, eval_dir, slot)
            self.journal.write("begin", commit=commit, slot=slot, eval_dir=str(eval_dir))
            self.in_flight[slot] = candidate
            self._slot_runs[slot] += 1
            self.progress.status(f"{phase}: evaluating", commit, self.steps_left)
        m = evaluate_candidate(
            CancellableBackend(self.backend, self.cancelled),
            candidate,
            metric=self.options.metric,
            tree=tree,
            phase=phase,
            launch_attempts=self.options.launch_attempts,
            retry_wait_s=self.options.retry_wait_s,
            scorer=self.scorer,
        )
        with self.lock:
            self.in_flight.pop(slot, None)
            if self.cancelled.is_set():  # torn down, but not a measurement: resume redoes it
                self.journal.write("cleaned", eval_dir=str(eval_dir))
                raise KeyboardInterrupt
            self.journal.add(m)
            shown = "no value" if m.value is None else f"{self.options.metric}={m.value:g}"
            why = f" ({m.reason})" if m.reason else ""
            self.progress.note(
                f"measured {commit[:12]} [{phase}]: {shown}{why} in {m.duration_s:g}s"
            )
        return m

    def _abandon(self, slot: int) -> None:
        """Tear down a slot that did not stop in time after an interrupt."""
        with self.lock:
            candidate = self.in_flight.pop(slot, None)
        if candidate is None:
            return
        with contextlib.suppress(InfraError):
            self.backend.teardown(candidate)
        with self.lock:
            self.journal.write("cleaned", eval_dir=str(candidate.eval_dir))

    def concurrently(self, tasks: list[Any], phase: str) -> list[Any]:
        """One round: task i runs in slot i, all at once."""
        self._slot_runs.clear()
        try:
            return run_concurrently(tasks, self.cancelled, self._abandon)
        finally:
            # A slot deciding by repeats measures several times in a row: that many rounds.
            self.rounds[phase] += max(self._slot_runs.values(), default=0)

    def batch(self, jobs: list[tuple[str, str]]) -> list[Measurement]:
        """One fresh run per (commit, phase) job, `slots` at a time."""
        out: list[Measurement] = []
        for start in range(0, len(jobs), self.slots):
            chunk = jobs[start : start + self.slots]

            def task(slot: int, commit: str, phase: str) -> Measurement:
                m = self.measure(commit, self.repo.tree_of(commit), phase, slot)
                self.used[m.id] = m
                return m

            tasks = [
                (lambda s=slot, c=commit, p=phase: task(s, c, p))
                for slot, (commit, phase) in enumerate(chunk)
            ]
            out += self.concurrently(tasks, chunk[0][1])
        return out

    def verdicts_of(self, commits: list[str], threshold: float, phase: str) -> list[str]:
        """Verdicts of up to `slots` commits, decided concurrently (one slot each)."""
        tasks = [
            (lambda s=slot, c=commit: self.verdict(c, threshold, phase, s))
            for slot, commit in enumerate(commits)
        ]
        return self.concurrently(tasks, phase)

    def clean_up_after_crash(self) -> None:
        """Tear down what a killed run left up (a cluster costs money), before anything else."""
        for begun in self.journal.unfinished():
            slot = int(begun.get("slot", 0))
            worktree = self.run_dir / "worktrees" / f"slot-{slot}"
            self.slot_worktrees.add(worktree)
            self.progress.note(f"tearing down {begun['commit'][:12]}, left up by a killed run")
            self.repo.add_worktree(worktree, begun["commit"])
            candidate = Candidate(begun["commit"], worktree, Path(begun["eval_dir"]), slot)
            with contextlib.suppress(InfraError):
                self.backend.teardown(candidate)
            self.journal.write("cleaned", eval_dir=begun["eval_dir"])

    def runs(self, commit: str, tree: str, phase: str) -> list[Measurement]:
        found = self.journal.for_tree(tree, confirm=phase == "confirm")
        for m in found:
            self.used[m.id] = m
        return found

    def measure_n(
        self,
        commits: list[str],
        phase: str,
        n: int,
        spare: Callable[[int], list[str]] | None = None,
    ) -> list[list[Measurement]]:
        """At least `n` runs of each commit (fewer measured when the journal has some).

        `spare(k)` names up to k commits for the slots the last round would leave idle:
        speculative search runs while the endpoints are measured. They are journaled
        like any run (phase "bisect"), and reach the search only through the journal,
        once the endpoints have checked out.
        """
        found = [self.runs(c, self.repo.tree_of(c), phase) for c in commits]
        # Interleaved (good, bad, good, bad, ...) so parallel slots pair them up.
        missing = [
            (c, phase)
            for r in range(n)
            for c, runs in zip(commits, found, strict=True)
            if r >= len(runs)
        ]
        idle = (-len(missing)) % self.slots if missing else 0
        ahead = [(c, "bisect") for c in spare(idle)[:idle]] if spare and idle else []
        for m in self.batch(missing + ahead):
            if m.commit in commits and m.phase == phase:
                found[commits.index(m.commit)].append(m)
        return found

    def verdict(self, commit: str, threshold: float, phase: str = "bisect", slot: int = 0) -> str:
        tree = self.repo.tree_of(commit)
        while True:
            found = self.runs(commit, tree, phase)
            decision = self.rule.decide([m.value for m in found], threshold)
            if decision.verdict is not None:
                reason = decision.reason
                if decision.verdict == "skip" and found:
                    reason = found[-1].reason or reason
                if phase != "confirm":
                    self.verdicts[commit], self.reasons[commit] = decision.verdict, reason
                return decision.verdict
            self.measure(commit, tree, phase, slot)  # journaled; the next pass sees it
