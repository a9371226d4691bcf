"""Probabilistic bisection: a posterior over which commit of a linear range is the culprit.

Positions are the commits of good..bad, oldest first; the last one is the bad
endpoint (known bad, never queried). The prior is uniform. An observation at
position x multiplies every position <= x by P(obs | x is bad) and every
position > x by P(obs | x is good) (Horstein; Waeber, Frazier & Henderson 2013).
Log-space, so hundreds of observations never underflow.

A commit that cannot be measured (skip) carries no information: it is never
picked again, and it cannot be told apart from the next measurable commit, so
skipped positions and the measurable one after them form a *group*. The answer
is the group with the most mass; a group of more than one commit is reported as
a candidate range, like git bisect's "could be any of".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Group:
    first: int  # index of the oldest position in the group
    last: int  # index of the newest (the measurable one, or the bad endpoint)
    mass: float


class Posterior:
    def __init__(self, commits: list[str], prior: list[float] | None = None) -> None:
        if not commits:
            raise ValueError("a posterior needs at least one position")
        self.commits = list(commits)
        self.index = {c: i for i, c in enumerate(self.commits)}
        weights = np.ones(len(commits)) if prior is None else np.asarray(prior, dtype=np.float64)
        self.log_p: npt.NDArray[np.float64] = np.log(weights / weights.sum())
        self.skipped: set[int] = set()
        self.measurable = np.ones(len(commits), dtype=bool)  # False: skipped
        self.observed: dict[int, int] = {}  # position -> observations there

    @property
    def size(self) -> int:
        return len(self.commits)

    def probabilities(self) -> npt.NDArray[np.float64]:
        p: npt.NDArray[np.float64] = np.exp(self.log_p - self.log_p.max())
        p /= p.sum()
        return p

    def cdf(self) -> npt.NDArray[np.float64]:
        """cdf[x] = P(culprit <= x) = P(position x is bad)."""
        cdf: npt.NDArray[np.float64] = np.cumsum(self.probabilities())
        return cdf

    def observe(self, position: int, log_bad: float, log_good: float) -> None:
        """One run at `position` whose outcome has these log-likelihoods if x is bad / good."""
        self.log_p[: position + 1] += log_bad
        self.log_p[position + 1 :] += log_good
        self.log_p -= self.log_p.max()
        self.observed[position] = self.observed.get(position, 0) + 1

    def skip(self, position: int) -> None:
        if position != self.size - 1 and position not in self.observed:
            self.skipped.add(position)
            self.measurable[position] = False

    def groups(self) -> list[Group]:
        ends = np.nonzero(self.measurable)[0]
        cdf = self.cdf()
        masses = np.diff(np.concatenate(([0.0], cdf[ends])))
        starts = np.concatenate(([0], ends[:-1] + 1))
        return [
            Group(int(f), int(last), float(m))
            for f, last, m in zip(starts, ends, masses, strict=True)
        ]

    def best(self) -> Group:
        groups = self.groups()
        return groups[int(np.argmax([g.mass for g in groups]))]

    def picks(self, k: int) -> list[int]:
        """Up to k positions at the posterior quantiles j/(k+1), measurable ones only.

        The nearest measurable position on *either* side of each quantile is taken:
        always rounding one way gets stuck querying the mode forever.
        """
        allowed = np.nonzero(self.measurable[:-1])[0]
        if allowed.size == 0:
            return []
        cdf = self.cdf()[allowed]
        chosen: list[int] = []
        for j in range(1, k + 1):
            target = j / (k + 1)
            at = int(np.searchsorted(cdf, target))
            options = [i for i in (at - 1, at) if 0 <= i < allowed.size]
            best = min(options, key=lambda i: abs(float(cdf[i]) - target))
            chosen.append(int(allowed[best]))
        return chosen

    def decided(self, confidence: float) -> dict[int, str]:
        """Observed positions whose verdict the posterior has settled: bad, good; and skips."""
        cdf = self.cdf()
        out: dict[int, str] = dict.fromkeys(self.skipped, "skip")
        for i in self.observed:
            if cdf[i] >= confidence:
                out[i] = "bad"
            elif cdf[i] <= 1 - confidence:
                out[i] = "good"
        return out

    def smallest_range(self, mass: float) -> tuple[int, int, float]:
        """The shortest run of consecutive positions holding at least `mass`."""
        cdf = np.concatenate(([0.0], self.cdf()))  # cdf[j] = mass of positions < j
        # For each left end, the first right end reaching `mass` (searchsorted is monotone).
        rights = np.searchsorted(cdf, cdf[:-1] + mass - 1e-12, side="left")
        valid = rights <= self.size
        if not valid.any():
            return 0, self.size - 1, 1.0
        lefts = np.nonzero(valid)[0]
        lengths = rights[lefts] - lefts
        best = int(lefts[int(np.argmin(lengths))])
        right = int(rights[best])
        return best, right - 1, float(cdf[right] - cdf[best])
