"""Noise-aware search: probabilistic bisection over the linear range, through the Evaluator.

The positions are good, every commit of good..bad (oldest first, bad last) and
a sentinel "no commit is bad". The good endpoint ("the good commit is already
bad") and the sentinel ("the bad commit is not bad") start with 1 % prior mass
each: the user's endpoints are trusted but checked, and the endpoints' runs are
observations like any other, so a flipped endpoint run costs a few more runs,
not the search. Each round measures up to `slots` commits at the posterior
quantiles j/(slots+1); the search stops once one group holds `confidence` of the
mass, or when the evaluation budget is spent (then the answer is *unsure* and
the smallest range holding 95 % is named).

With 3 or more slots, once one commit holds CONFIRM_AHEAD of the mass, two slots
of the round measure its confirmation (it and its parent, phase "confirm") beside
the search runs: when the round ends the search on that commit, the confirmation
needs no round of its own. Confirmation runs never enter the posterior.

git bisect only ever hears decided verdicts: P(culprit <= x) >= confidence is
bad, <= 1 - confidence is good, plus skips. If later runs un-decide a verdict,
the session is restarted and the decided ones replayed, so git's state never
contradicts the answer. The posterior is rebuilt from the journal (every raw
measurement), so a resumed run continues where it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bisector.errors import BisectorError
from bisector.gitrepo import BisectSession
from bisector.search.evaluator import Evaluator
from bisector.search.likelihood import Likelihood
from bisector.search.measure import Measurement
from bisector.search.posterior import Posterior

NO_CULPRIT = "(no commit in the range is bad)"
OUT_OF_RANGE_PRIOR = 0.01
LIKELY_MASS = 0.95
CONFIRM_AHEAD = 0.9  # the top commit's mass from which idle slots confirm it


@dataclass
class NoisyOutcome:
    group: list[str]  # the culprit's group: one commit, or a range split only by skips
    confidence: float
    sure: bool
    likely: list[str] = field(default_factory=list)  # smallest range holding LIKELY_MASS
    likely_mass: float = 0.0


def automatic_budget(range_size: int) -> int:
    """Evaluations (endpoints and search) before a noise-aware run gives up as unsure."""
    return 10 * math.ceil(math.log2(range_size + 2)) + 10


class NoisySearch:
    def __init__(
        self,
        b: Evaluator,
        session: BisectSession,
        likelihood: Likelihood,
        budget: int,
    ) -> None:
        self.b = b
        self.session = session
        self.likelihood = likelihood
        self.budget = budget
        self.confidence = b.options.confidence

    @staticmethod
    def prior(good: str, commits: list[str]) -> Posterior:
        """Before any run: good, the range (oldest first, bad last), and the sentinel."""
        positions = [good, *commits, NO_CULPRIT]
        inside = (1 - 2 * OUT_OF_RANGE_PRIOR) / len(commits)
        return Posterior(
            positions, [OUT_OF_RANGE_PRIOR, *[inside] * len(commits), OUT_OF_RANGE_PRIOR]
        )

    def spent(self) -> int:
        return sum(m.phase != "confirm" for m in self.b.journal.own)

    def run(
        self, good: str, bad: str, commits: list[str], restart: Callable[[], None]
    ) -> NoisyOutcome:
        """Search good..bad (`commits` oldest first, ending with bad); git is `restart`able."""
        post = self.prior(good, commits)
        positions = post.commits
        history = [
            m
            for runs in self.b.journal.by_tree.values()
            for m in runs
            if m.phase != "confirm" and m.commit in post.index
        ]
        for m in sorted(history, key=lambda m: m.started_at):
            self.b.used[m.id] = m
            self._apply(post, m)
        marked: dict[str, str] = {}
        self._sync(post, marked, restart)
        while True:
            best = post.best()
            left = self.budget - self.spent()
            if best.mass >= self.confidence or left <= 0:
                break
            confirm = self._confirm_ahead(post)
            picks = post.picks(min(self.b.slots - len(confirm), left))
            if not picks:
                break
            lo, hi, _ = post.smallest_range(LIKELY_MASS)
            self.b.steps_left = math.ceil(math.log2(max(hi - lo + 1, 1)))
            jobs = [(positions[x], "bisect") for x in picks] + [(c, "confirm") for c in confirm]
            for m in self.b.batch(jobs):
                if m.phase != "confirm":
                    self._apply(post, m)
            self._sync(post, marked, restart)
        return self._outcome(post)

    def _confirm_ahead(self, post: Posterior) -> list[str]:
        """The likely culprit and its parent, to confirm in this round's idle slots.

        Once one commit holds CONFIRM_AHEAD of the mass, this round probably ends the
        search: measuring its confirmation now saves the confirmation's own round.
        Confirmation runs never enter the posterior (they are a fresh check of the
        answer); should another commit end up the culprit, they are simply spent.
        """
        best = post.best()
        if (
            not self.b.options.fold_rounds
            or self.b.slots < 3  # two for the confirmation, at least one for the search
            or best.mass < CONFIRM_AHEAD
            or best.first != best.last
            or not 0 < best.last < post.size - 1  # the good endpoint or the sentinel
        ):
            return []
        culprit = post.commits[best.last]
        pair = [culprit, self.b.repo.info(culprit).parents[0]]
        if any(self.b.journal.for_tree(self.b.repo.tree_of(c), confirm=True) for c in pair):
            return []  # asked for already: the final confirmation decides with those
        return pair

    def _apply(self, post: Posterior, m: Measurement) -> None:
        x = post.index[m.commit]
        if m.value is None:
            post.skip(x)
            return
        log_bad, log_good = self.likelihood(m.value)
        post.observe(x, log_bad, log_good)

    def _sync(self, post: Posterior, marked: dict[str, str], restart: Callable[[], None]) -> None:
        cdf = post.cdf()
        decided = {
            post.commits[i]: verdict
            for i, verdict in post.decided(self.confidence).items()
            if 0 < i < post.size - 2  # not the endpoints (git has them) nor the sentinel
        }
        if any(decided.get(c) != v for c, v in marked.items()):
            restart()
            marked.clear()
        # Bads newest first: `git bisect bad X` moves the bad end to X even when X is newer.
        positions = sorted(post.index[c] for c in decided)
        order = [i for i in positions if decided[post.commits[i]] != "bad"]
        order += [i for i in reversed(positions) if decided[post.commits[i]] == "bad"]
        for i in order:
            commit = post.commits[i]
            verdict = decided.get(commit)
            if verdict is None or marked.get(commit) == verdict:
                continue
            self.session.mark(commit, verdict)
            marked[commit] = verdict
            self.b.verdicts[commit] = verdict
            runs = post.observed.get(i, 0)
            self.b.reasons[commit] = (
                "could not be measured"
                if verdict == "skip"
                else f"P(culprit at or before it) = {cdf[i]:.4f} after {runs} run(s)"
            )
            self.b.journal.write("verdict", commit=commit, verdict=verdict)
        for commit in [c for c in self.b.verdicts if c in post.index and c not in decided]:
            del self.b.verdicts[commit]  # no longer decided: not what git was told

    def _outcome(self, post: Posterior) -> NoisyOutcome:
        best = post.best()
        group = post.commits[best.first : best.last + 1]
        sure = best.mass >= self.confidence
        if sure and (best.first == 0 or best.last == post.size - 1):
            said = "the good endpoint is already bad" if best.first == 0 else "the bad one is not"
            raise BisectorError(
                f"endpoints do not separate: the runs say {said} (probability {best.mass:.3f}); "
                "pick another range, metric or threshold"
            )
        outcome = NoisyOutcome(group, best.mass, sure)
        if not sure:
            lo, hi, mass = post.smallest_range(LIKELY_MASS)
            outcome.likely = [c for c in post.commits[lo : hi + 1] if c != NO_CULPRIT]
            outcome.likely_mass = mass
        return outcome
