"""Which commit(s) to evaluate next. Verdicts always go to git bisect, whatever picks.

A strategy sees the search state (the git bisect session, the verdicts so far,
the commits still possible) and returns up to `slots` commits to evaluate this
round; an empty list means it has nothing more to ask. The default asks git
bisect for its own pick. Noise-aware or parallel strategies (issue 5) return
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
