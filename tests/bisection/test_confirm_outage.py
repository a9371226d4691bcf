"""What the confirmation measures, and what it counts (issue 30, the mutation audit).

The confirmation (bisector.bisection.confirm) is driven here with a stand-in for the
evaluator that answers each commit's confirmation with a given decision and records
what it was asked to measure, so each test asserts one rule directly: an outage is
never a confirmation, the culprit's parent is always measured afresh, and a commit
git inferred is measured again once any verdict in the run was given by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from bisector.bisection.confirm import confirm
from bisector.bisection.start import Bisection
from bisector.gitrepo import CommitInfo
from bisector.measure.journal import Mark, append_line
from bisector.measure.measurement import Measurement
from bisector.search.base import Found
from bisector.search.decide import Decision, DecisionRule, MajorityRule

CULPRIT, PARENT, TIP, OTHER = "c" * 40, "p" * 40, "t" * 40, "o" * 40


@dataclass
class _Repo:
    parents: dict[str, tuple[str, ...]]

    def info(self, commit: str) -> CommitInfo:
        return CommitInfo(commit, "tree", "", "", "", self.parents.get(commit, ()))


@dataclass
class _Evaluator:
    """Answers each commit's confirmation with `answers` (default: as the claim expects)."""

    answers: dict[str, Decision]
    search_runs: dict[str, list[Measurement]] = field(default_factory=dict)
    measured: list[tuple[str, str]] = field(default_factory=list)  # (commit, phase)
    slots: int = 1
    runs_after_search: int = 0
    early_good_withdrawn: bool = False
    used: dict[str, Measurement] = field(default_factory=dict)
    expected: list[tuple[int | None, bool]] = field(default_factory=list)

    def expect(self, steps_left: int | None, *, full_length: bool = False) -> None:
        self.expected.append((steps_left, full_length))

    def mark(self, commit: str) -> Mark | None:
        return None

    def runs(self, commit: str, phase: str) -> list[Measurement]:
        return self.search_runs.get(commit, []) if phase == "bisect" else []

    def decide_each(
        self,
        commits: list[str],
        threshold: float,
        rules: Sequence[DecisionRule],
        phase: str,
        why: str | Sequence[str],
    ) -> list[Decision]:
        self.measured += [(c, phase) for c in commits]
        return [self.answers.get(c, Decision("bad" if c == CULPRIT else "good")) for c in commits]


@dataclass
class _Settings:
    noise_aware: bool = False
    repeats: int = 1
    worse: str = "higher"


@dataclass
class _Journal:
    path: Path


@dataclass
class _Bisection:
    repo: _Repo
    evaluator: _Evaluator
    journal: _Journal
    settings: _Settings = field(default_factory=_Settings)
    rule: DecisionRule = field(default_factory=MajorityRule)


def _full_run(commit: str, value: float) -> Measurement:
    return Measurement(commit, "tree", "bisect", value=value, ran_s=600.0)


def _bisection(tmp_path: Path, evaluator: _Evaluator, *, merge: bool = False) -> Bisection:
    parents: dict[str, tuple[str, ...]] = {CULPRIT: (PARENT, TIP) if merge else (PARENT,)}
    journal = tmp_path / "journal.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.touch()
    b = _Bisection(_Repo(parents), evaluator, _Journal(journal))
    return cast(Bisection, b)


@pytest.mark.parametrize(
    "outage",
    [Decision("skip", "launch: cluster did not come up (3 attempts)"), Decision(None)],
    ids=["skip", "no-verdict"],
)
def test_a_parent_an_outage_kept_from_being_measured_is_not_confirmed(
    tmp_path: Path, outage: Decision
) -> None:
    evaluator = _Evaluator({PARENT: outage}, {PARENT: [_full_run(PARENT, 2)]})
    out = confirm(_bisection(tmp_path, evaluator), Found(CULPRIT), [], 10.0)
    assert not out.confirmed
    assert out.verdicts[PARENT] == "skip"
    (problem,) = out.problems
    assert PARENT[:12] in problem and "could not be measured" in problem
    assert outage.reason in problem


def test_a_culprit_an_outage_kept_from_being_measured_is_not_confirmed(tmp_path: Path) -> None:
    outage = Decision(None)  # no verdict at all (every run an infrastructure skip)
    evaluator = _Evaluator({CULPRIT: outage}, {CULPRIT: [_full_run(CULPRIT, 40)]})
    out = confirm(_bisection(tmp_path, evaluator), Found(CULPRIT), [], 10.0)
    assert not out.confirmed
    assert any(CULPRIT[:12] in p for p in out.problems)


def test_the_culprits_parent_is_measured_afresh_though_the_search_measured_it_in_full(
    tmp_path: Path,
) -> None:
    """Its search run was full length and good: the confirmation measures it again anyway
    (a fresh run, phase confirm), beside the culprit, before the claim is confirmed."""
    runs = {CULPRIT: [_full_run(CULPRIT, 40)], PARENT: [_full_run(PARENT, 2)]}
    evaluator = _Evaluator({}, runs)
    out = confirm(_bisection(tmp_path, evaluator), Found(CULPRIT), [], 10.0)
    assert (PARENT, "confirm") in evaluator.measured
    assert (CULPRIT, "confirm") in evaluator.measured
    assert out.confirmed
    # The ETA counts them as what they are: runs that never end early.
    assert evaluator.expected == [(2, True)]


def test_a_fresh_bad_parent_run_undoes_a_culprit_the_search_measured_good(tmp_path: Path) -> None:
    runs = {CULPRIT: [_full_run(CULPRIT, 40)], PARENT: [_full_run(PARENT, 2)]}
    evaluator = _Evaluator({PARENT: Decision("bad", "1 of 1 runs at or above 10")}, runs)
    out = confirm(_bisection(tmp_path, evaluator), Found(CULPRIT), [], 10.0)
    assert not out.confirmed
    assert any(PARENT[:12] in p and "measured bad" in p for p in out.problems)


def test_with_a_mark_in_the_run_an_inferred_branch_tip_is_measured_again(tmp_path: Path) -> None:
    """No early good verdicts, but a person marked a commit (any): a branch tip whose
    good verdict git inferred (no run of its own) is measured before the merge is
    confirmed; without any mark, an inferred verdict stands."""
    runs = {CULPRIT: [_full_run(CULPRIT, 40)], PARENT: [_full_run(PARENT, 2)]}
    unmarked = _Evaluator({}, runs)
    confirm(_bisection(tmp_path / "a", unmarked, merge=True), Found(CULPRIT), [], 10.0)
    assert (TIP, "confirm") not in unmarked.measured

    marked = _Evaluator({TIP: Decision("bad", "1 of 1 runs at or above 10")}, runs)
    b = _bisection(tmp_path / "b", marked, merge=True)
    append_line(b.journal.path, Mark(OTHER, "good", "by hand").to_json())
    out = confirm(b, Found(CULPRIT), [], 10.0)
    assert (TIP, "confirm") in marked.measured
    assert not out.confirmed
    assert any("without a run of its own" in p for p in out.problems)


def test_with_a_mark_in_the_run_an_inferred_first_parent_of_a_merge_is_measured_again(
    tmp_path: Path,
) -> None:
    """The culprit sits inside a merge the first-parent search descended into; the
    merge's first parent was good by git's inference alone: with a mark in the run it is
    measured again (and the merge itself, bad with a run of its own, is not)."""
    merge, before = "m" * 40, "f" * 40
    runs = {
        CULPRIT: [_full_run(CULPRIT, 40)],
        PARENT: [_full_run(PARENT, 2)],
        merge: [_full_run(merge, 40)],
    }
    evaluator = _Evaluator({}, runs)
    b = _bisection(tmp_path, evaluator)
    cast(_Repo, b.repo).parents[merge] = (before, CULPRIT)
    append_line(b.journal.path, Mark(OTHER, "bad", "by hand").to_json())
    out = confirm(b, Found(CULPRIT), [merge], 10.0)
    assert (before, "confirm") in evaluator.measured
    assert (merge, "confirm") not in evaluator.measured
    assert out.confirmed
