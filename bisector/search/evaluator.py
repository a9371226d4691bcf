"""Measuring commits for a bisection: one evaluation per call, journaled before it counts.

`Evaluator.verdict(commit, threshold)` is what a strategy's pick becomes: it reuses
journaled (or cached) measurements, measures more while the decision rule asks for
more, and returns good/bad/skip. Each slot has its own worktree, so parallel slots
(issue 5) can call `measure` for different commits at once.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from bisector.backends.base import Backend, Candidate
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.search.decide import DecisionRule
from bisector.search.journal import Journal
from bisector.search.measure import Measurement, evaluate_candidate
from bisector.search.options import RunOptions
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

    def measure(self, commit: str, tree: str, phase: str, slot: int = 0) -> Measurement:
        worktree = self.run_dir / "worktrees" / f"slot-{slot}"
        self.slot_worktrees.add(worktree)
        self.repo.add_worktree(worktree, commit)
        eval_dir = self.run_dir / "evals" / f"{len(self.journal.own) + 1:03d}-{commit[:12]}"
        candidate = Candidate(commit, worktree, eval_dir, slot)
        self.journal.write("begin", commit=commit, slot=slot, eval_dir=str(eval_dir))
        self.progress.status(f"{phase}: evaluating", commit, self.steps_left)
        m = evaluate_candidate(
            self.backend,
            candidate,
            metric=self.options.metric,
            tree=tree,
            phase=phase,
            launch_attempts=self.options.launch_attempts,
            retry_wait_s=self.options.retry_wait_s,
        )
        self.journal.add(m)
        shown = "no value" if m.value is None else f"{self.options.metric}={m.value:g}"
        why = f" ({m.reason})" if m.reason else ""
        self.progress.note(f"measured {commit[:12]} [{phase}]: {shown}{why} in {m.duration_s:g}s")
        return m

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

    def measure_n(self, commit: str, phase: str, n: int) -> list[Measurement]:
        """At least `n` runs of `commit` (fewer measured when the journal has some)."""
        tree = self.repo.tree_of(commit)
        found = self.runs(commit, tree, phase)
        while len(found) < n:
            m = self.measure(commit, tree, phase)
            self.used[m.id] = m
            found.append(m)
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
