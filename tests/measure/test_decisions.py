"""A commit's verdict from its runs (bisector/measure/decisions.py): a same-tree merge is
said as such, typed (`Decision.same_tree`), never recognised later by its words."""

from __future__ import annotations

from pathlib import Path

from bisector.measure.decisions import Deciding, _same_tree_said
from bisector.measure.early import EarlyPolicy
from bisector.measure.journal import Journal, Mark
from bisector.measure.measurement import Measurement
from bisector.search.base import Job
from bisector.search.decide import Decision, MajorityRule, SameTree

MERGE, BRANCH_TIP = "a" * 40, "b" * 40


def test_a_verdict_from_another_commit_with_the_tree_is_a_same_tree_merge() -> None:
    runs = [Measurement(BRANCH_TIP, "t", "bisect", value=4715.0)]
    decision = _same_tree_said(MERGE, runs, Decision("bad", "1 of 1 runs at or above"), "conflicts")
    assert decision.verdict == "bad"
    assert decision.same_tree == SameTree((BRANCH_TIP,), ("4,715",))
    assert decision.reason == f"same tree as {BRANCH_TIP[:12]}, measured there: 4,715"


def test_a_verdict_from_the_commits_own_runs_is_not() -> None:
    runs = [
        Measurement(BRANCH_TIP, "t", "bisect", value=4715.0),
        Measurement(MERGE, "t", "bisect", value=4700.0),
    ]
    given = Decision("bad", "2 of 2 runs at or above")
    assert _same_tree_said(MERGE, runs, given, "conflicts") == given
    assert given.same_tree is None


def test_a_reason_that_only_reads_like_one_is_not_a_same_tree_merge() -> None:
    said = Decision("good", "same tree as yesterday's, marked by hand")
    assert said.same_tree is None


class _Repo:
    def tree_of(self, commit: str) -> str:
        return "plain"


class _Deciding(Deciding):
    """The deciding half over a real journal, every commit's tree `tree` (the culprits
    reverted in it); a run asked for measures 3."""

    def __init__(self, journal: Journal, tree: str) -> None:
        self.journal = journal
        self.repo = _Repo()  # type: ignore[assignment]
        self.early = EarlyPolicy(
            metric="conflicts", check_every_s=None, early_good=True, warmup_s=60.0,
            watchable=False, growing_scorer=lambda *_: None,  # type: ignore[arg-type]
        )  # fmt: skip
        self.used = {}
        self.tree = tree
        self.measured: list[str] = []

    def tree_for(self, commit: str) -> str:
        return self.tree

    def measure(self, job: Job, slot: int = 0, early_threshold: float | None = None) -> Measurement:
        self.measured.append(job.phase)
        m = Measurement(job.commit, self.tree, job.phase, value=3.0)
        self.journal.add(m)
        return m


def _journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.jsonl", tmp_path / "cache.jsonl", "f")


def test_the_revert_check_rests_on_no_mark_and_no_early_stopped_run(tmp_path: Path) -> None:
    # The bad endpoint with the culprit reverted has its parent's tree: the parent's search
    # run, stopped early, and a hand mark on the endpoint decided "does not restore".
    journal = _journal(tmp_path)
    journal.add(Measurement(BRANCH_TIP, "reverted", "bisect", value=500.0, stopped_early="x"))
    journal.write(Mark(commit=MERGE, verdict="bad"))
    deciding = _Deciding(journal, "reverted")
    assert deciding.decide(MERGE, 100.0, MajorityRule(), "revert").verdict == "good"
    assert deciding.measured == ["revert"]  # measured anew, full length


def test_a_mark_on_a_commit_does_not_stand_for_it_with_culprits_reverted(
    tmp_path: Path,
) -> None:
    journal = _journal(tmp_path)
    journal.write(Mark(commit=MERGE, verdict="bad"))
    deciding = _Deciding(journal, "reverted")
    assert deciding.decide(MERGE, 100.0, MajorityRule(), "bisect").verdict == "good"
    assert deciding.measured == ["bisect"]
    # The commit as it is: the person's mark decides the search's verdict, nothing runs.
    plain = _Deciding(journal, "plain")
    assert plain.decide(MERGE, 100.0, MajorityRule(), "bisect").verdict == "bad"
    assert plain.measured == []
