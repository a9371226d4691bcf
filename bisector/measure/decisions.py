"""A commit's verdict from its measurements: a person's mark, journaled runs first, then
new runs until the rule decides; a verdict from runs of another commit with the same tree
(a same-tree merge) says so, typed (bisector.search.decide.SameTree)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from bisector.gitrepo import GitRepo
from bisector.measure.early import EarlyPolicy
from bisector.measure.journal import Journal, Mark, read_journal
from bisector.measure.measurement import Measurement
from bisector.numbers import format_value
from bisector.search.base import Job
from bisector.search.decide import Decision, DecisionRule, SameTree

T = TypeVar("T")


def _same_tree_said(
    commit: str, found: list[Measurement], decision: Decision, metric: str
) -> Decision:
    """A verdict from runs of other commits with the same tree (a same-tree merge: a merge
    and its branch's last commit) says so: there is no measurement line of `commit` itself
    to point to."""
    if not found or any(m.commit == commit for m in found):
        return decision
    same = SameTree(
        tuple(m.commit for m in found), tuple(format_value(m.value, metric) for m in found)
    )
    return Decision(decision.verdict, same.text(), same_tree=same)


# Phases whose verdicts rest on measurements alone (no mark decides them), and those
# whose runs must be full length (bisector.bisection.confirm, bisector.bisection.revert).
MEASURED_ONLY = ("confirm", "revert")
FULL_LENGTH_ONLY = ("revert",)


class Deciding:
    """The evaluator's deciding half (bisector.measure.evaluator.Evaluator is one): what
    the searches ask of a commit, answered from the journal and, if need be, new runs."""

    journal: Journal
    repo: GitRepo
    early: EarlyPolicy
    used: dict[str, Measurement]  # every measurement the report rests on

    def measure(self, job: Job, slot: int = 0, early_threshold: float | None = None) -> Measurement:
        raise NotImplementedError

    def concurrently(self, tasks: Sequence[Callable[[], T]], phase: str) -> list[T]:
        raise NotImplementedError

    def tree_for(self, commit: str) -> str:
        """The tree a measurement of `commit` is of (the evaluator's: reverts applied)."""
        return self.repo.tree_of(commit)

    def runs(self, commit: str, phase: str) -> list[Measurement]:
        """The journaled (or cached) runs of `commit` usable in `phase`; they count as used."""
        found = self.journal.for_tree(self.tree_for(commit), confirm=phase == "confirm")
        if phase in FULL_LENGTH_ONLY:  # its promise: whole warmups (a search run of the
            # same tree, the culprit's parent's, may have ended early)
            found = [m for m in found if not m.stopped_early]
        if self.early.withdrawn or not self.early.early_good:
            # Withdrawn, or turned off for a resumed run: early goods decide nothing.
            found = [m for m in found if m.early_verdict != "good"]
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
        # A mark is a person's verdict on the commit as it is: never the evidence a
        # confirmation or a revert check promises, nor the commit with culprits reverted.
        plain = self.tree_for(commit) == self.repo.tree_of(commit)
        if marked is not None and phase not in MEASURED_ONLY and plain:
            note = f": {marked.note}" if marked.note else ""
            return Decision(marked.verdict, f"marked {marked.verdict} by hand{note}")
        while True:
            found = self.runs(commit, phase)
            decision = rule.decide([m.value for m in found], threshold)
            if decision.verdict is not None:
                if decision.verdict == "skip" and found:
                    return Decision("skip", found[-1].reason or decision.reason)
                return _same_tree_said(commit, found, decision, self.early.metric)
            # Journaled; the next pass sees it. Search runs past the endpoints may end their
            # warmup early (see `early_stop`); endpoints and the confirmation run full length.
            self.measure(Job(commit, phase, why), slot, early_threshold=threshold)

    def decide_all(
        self, commits: list[str], threshold: float, rule: DecisionRule, phase: str, why: str
    ) -> list[Decision]:
        """Decisions on up to `slots` commits, made concurrently (one slot each)."""
        return self.decide_each(commits, threshold, [rule] * len(commits), phase, why)

    def decide_each(
        self,
        commits: list[str],
        threshold: float,
        rules: Sequence[DecisionRule],
        phase: str,
        why: str | Sequence[str],
    ) -> list[Decision]:
        """Like `decide_all`, each commit with its own rule (and its own why, if given)."""
        whys = [why] * len(commits) if isinstance(why, str) else list(why)
        tasks = [
            functools.partial(self.decide, commit, threshold, rule, phase, slot=slot, why=said)
            for slot, (commit, rule, said) in enumerate(zip(commits, rules, whys, strict=True))
        ]
        return self.concurrently(tasks, phase)
