"""The search interface: what a search is given (a range) and what it returns (Found).

Two implementations, each owning its state: `GitBisectSearch` (plain git bisect
verdicts, bisector.search.plain) and `PosteriorSearch` (probabilistic bisection,
bisector.search.noisy). The run pipeline (bisector.bisection.pipeline) calls
`find` on the whole range and again on each merge it descends into.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bisector.report.model import SearchSummary
from bisector.search.decide import SameTree


@dataclass(frozen=True)
class Job:
    """A unit of work for the evaluator: a commit, the phase it is measured in, and why."""

    commit: str
    phase: str  # endpoint, bisect, confirm
    why: str = ""  # why the search wants this commit measured (shown in the timeline)


@dataclass(frozen=True)
class SearchRange:
    """good..bad and how to walk it.

    `commits`: the range oldest first, ending with `bad` (the posterior's positions;
    a chain when `chain`). `first_parent`: how git bisect walks it. `chain`: a merge
    found here stands for its whole branch, so the pipeline descends into it.
    `merge`: the merge this range descends into (its culprit may be that merge itself).
    """

    good: str
    bad: str
    commits: list[str]
    first_parent: bool
    chain: bool
    merge: str | None = None


@dataclass(frozen=True)
class Inside:
    """Where inside a culprit merge's branch the first bad commit lies when the commits
    between could not be measured: after `good`, at or before `bad`, the `unmeasured`
    between (each a skip: not built, not launched, ...)."""

    good: str
    bad: str
    unmeasured: list[str]


@dataclass
class Found:
    """What a search concluded about one range."""

    culprit: str | None  # the first bad commit, when the search is sure of one
    candidates: list[str] = field(default_factory=list)  # could be any of (skips in between)
    confidence: float | None = None  # posterior probability (None: plain verdicts)
    sure: bool = True  # False: the budget ran out first
    likely: list[str] = field(default_factory=list)  # smallest range holding 95 % (unsure)
    likely_mass: float = 0.0
    best_guess: list[str] = field(default_factory=list)
    # The culprit is a merge whose branch could not be narrowed to one commit: where in
    # the branch the first bad commit lies (bisector.bisection.descent).
    inside: Inside | None = None


class Search(Protocol):
    verdicts: dict[str, str]  # what git bisect was told
    reasons: dict[str, str]  # why, per commit
    same_tree: dict[str, SameTree]  # verdicts that came from runs of another commit's tree

    def first_picks(self, whole: SearchRange, k: int) -> list[Job]:
        """The k commits this search would measure first (measured beside the endpoints)."""
        ...

    def find(self, within: SearchRange, ahead: list[str] | None = None) -> Found:
        """Search `within`; `ahead`: commits already measured speculatively."""
        ...

    def descent_range(self, merge: str) -> SearchRange:
        """The range of `merge`'s branch, walked the way this search walks a branch."""
        ...

    def summary(self) -> SearchSummary: ...
