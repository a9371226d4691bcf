"""Which commit(s) to evaluate next. Verdicts always go to git bisect, whatever picks.

A strategy sees the search state (the git bisect session, the verdicts so far,
the commits still possible) and returns up to `slots` commits to evaluate this
round; an empty list means it has nothing more to ask. The default asks git
bisect for its own pick. Noise-aware or parallel strategies return
other or more commits; the runner evaluates them and feeds every verdict to git.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bisector.gitrepo import BisectSession


@dataclass
class SearchState:
    session: BisectSession
    good: str
    bad: str
    threshold: float
    verdicts: dict[str, str] = field(default_factory=dict)  # commit -> good/bad/skip
    values: dict[str, list[float | None]] = field(default_factory=dict)  # commit -> runs

    def remaining(self) -> list[str]:
        """Commits git bisect still considers possible culprits."""
        return self.session.remaining()


class Strategy(Protocol):
    def choose(self, state: SearchState, slots: int) -> list[str]: ...


class GitBisectStrategy:
    """git bisect's own midpoint, one commit per round."""

    def choose(self, state: SearchState, slots: int) -> list[str]:
        pick = state.session.next_commit()
        return [pick] if pick else []


class SplitStrategy:
    """K commits per round splitting what git bisect has left into K + 1 parts.

    With one slot this is git bisect's own pick. Skipped commits and the current
    bad are never picked; `remaining` is newest first (git's order).
    """

    def choose(self, state: SearchState, slots: int) -> list[str]:
        if slots <= 1:
            return GitBisectStrategy().choose(state, slots)
        if state.session.done:
            return []
        remaining = state.remaining()
        open_ = [c for c in reversed(remaining[1:]) if state.verdicts.get(c) != "skip"]
        if not open_:
            return GitBisectStrategy().choose(state, slots)
        count = min(slots, len(open_))
        picks = [open_[(j * len(open_)) // (count + 1)] for j in range(1, count + 1)]
        return list(dict.fromkeys(picks))
