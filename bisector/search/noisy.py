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

from bisector.errors import BisectorError
from bisector.gitrepo import BisectSession
from bisector.measure.evaluator import Evaluator
from bisector.measure.measurement import Measurement
from bisector.report.model import LikelyRange, SearchSummary
from bisector.search.base import Found, Job, SearchRange
from bisector.search.decide import SameTree
from bisector.search.likelihood import Likelihood
from bisector.search.posterior import Posterior

NO_CULPRIT = "(no commit in the range is bad)"
OUT_OF_RANGE_PRIOR = 0.01
LIKELY_MASS = 0.95
CONFIRM_AHEAD = 0.9  # the top commit's mass from which idle slots confirm it
# A person's verdict (`bisector mark`) weighs like a run a million times surer than a coin.
MARK_LOG_ODDS = math.log(1e6)


def automatic_budget(range_size: int) -> int:
    """Evaluations (endpoints and search) before a noise-aware run gives up as unsure."""
    return 10 * math.ceil(math.log2(range_size + 2)) + 10


class PosteriorSearch:
    def __init__(
        self,
        evaluator: Evaluator,
        session: BisectSession,
        likelihood: Likelihood,
        *,
        budget: int,
        confidence: float,
        measure_ahead: bool = True,
        paths: tuple[str, ...] = (),
        likelihood_name: str = "verdict",
        error_rate: float = 0.0,
    ) -> None:
        self.evaluator = evaluator
        self.repo = evaluator.repo
        self.session = session
        self.likelihood = likelihood
        self.budget = budget
        self.confidence = confidence
        self.measure_ahead = measure_ahead
        self.paths = paths
        self.likelihood_name = likelihood_name
        self.error_rate = error_rate
        self.verdicts: dict[str, str] = {}
        self.reasons: dict[str, str] = {}
        self.same_tree: dict[str, SameTree] = {}  # posterior verdicts weigh runs, not trees
        self._last: Found | None = None

    @staticmethod
    def prior(good: str, commits: list[str]) -> Posterior:
        """Before any run: good, the range (oldest first, bad last), and the sentinel."""
        positions = [good, *commits, NO_CULPRIT]
        inside = (1 - 2 * OUT_OF_RANGE_PRIOR) / len(commits)
        return Posterior(
            positions, [OUT_OF_RANGE_PRIOR, *[inside] * len(commits), OUT_OF_RANGE_PRIOR]
        )

    def first_picks(self, whole: SearchRange, k: int) -> list[Job]:
        """The prior's quantiles: every run is evidence for the posterior."""
        if k <= 0 or len(whole.commits) < 2:
            return []
        prior = self.prior(whole.good, whole.commits)
        inside = set(whole.commits[:-1])
        picks = [prior.commits[x] for x in prior.picks(k)]
        why = "prior quantile, measured beside the endpoints"
        return [Job(c, "bisect", why) for c in dict.fromkeys(picks) if c in inside]

    def descent_range(self, merge: str) -> SearchRange:
        """The merged branch's first-parent chain, then the merge: a chain again, so a
        merge found inside it is descended into in turn."""
        info = self.repo.info(merge)
        parent, branch = info.parents[0], info.parents[1]
        commits = [*self.repo.rev_list(parent, branch, first_parent=True, paths=self.paths)]
        commits = [c for c in commits if c != merge] + [merge]
        return SearchRange(parent, merge, commits, first_parent=False, chain=True, merge=merge)

    def spent(self) -> int:
        return sum(m.phase != "confirm" for m in self.evaluator.journal.own)

    def find(self, within: SearchRange, ahead: list[str] | None = None) -> Found:
        """Search `within` (its commits oldest first, ending with bad)."""
        b = self.evaluator
        self._restart(within)
        post = self.prior(within.good, within.commits)
        positions = post.commits
        history = [
            m
            for runs in b.journal.by_tree.values()
            for m in runs
            # A measurement of the commit as this search measures it (reverts applied).
            if m.phase != "confirm" and m.commit in post.index and m.tree == b.tree_for(m.commit)
        ]
        for m in sorted(history, key=lambda m: m.started_at):
            b.used[m.id] = m
            self._apply(post, m)
        for commit in positions:
            self._apply_mark(post, commit)
        marked: dict[str, str] = {}
        self._sync(post, marked, within)
        while True:
            best = post.best()
            left = self.budget - self.spent()
            if best.mass >= self.confidence or left <= 0:
                break
            confirm = self._confirm_ahead(post)
            picks = post.picks(min(b.slots - len(confirm), left))
            if not picks:
                break
            lo, hi, _ = post.smallest_range(LIKELY_MASS)
            b.expect(math.ceil(math.log2(max(hi - lo + 1, 1))))
            why = f"posterior split, {hi - lo + 1} likely commits left"
            jobs = [Job(positions[x], "bisect", why) for x in picks]
            jobs += [Job(c, "confirm", "confirming the likely culprit early") for c in confirm]
            for m in b.batch(jobs):
                if m.phase != "confirm":
                    self._apply(post, m)
            self._sync(post, marked, within)
        found = self._outcome(post)
        self._last = found
        return found

    def _restart(self, within: SearchRange) -> None:
        self.session.start(
            within.good, within.bad, first_parent=within.first_parent, paths=self.paths
        )

    def _confirm_ahead(self, post: Posterior) -> list[str]:
        """The likely culprit and its parent, to confirm in this round's idle slots.

        Once one commit holds CONFIRM_AHEAD of the mass, this round probably ends the
        search: measuring its confirmation now saves the confirmation's own round.
        Confirmation runs never enter the posterior (they are a fresh check of the
        answer); should another commit end up the culprit, they are simply spent.
        """
        best = post.best()
        b = self.evaluator
        if (
            not self.measure_ahead
            or b.slots < 3  # two for the confirmation, at least one for the search
            or best.mass < CONFIRM_AHEAD
            or best.first != best.last
            or not 0 < best.last < post.size - 1  # the good endpoint or the sentinel
        ):
            return []
        culprit = post.commits[best.last]
        pair = [culprit, self.repo.info(culprit).parents[0]]
        if any(b.journal.for_tree(b.tree_for(c), confirm=True) for c in pair):
            return []  # asked for already: the final confirmation decides with those
        return pair

    def _apply(self, post: Posterior, m: Measurement) -> None:
        x = post.index[m.commit]
        if m.value is None:
            post.skip(x)
            return
        log_bad, log_good = self.likelihood(m.value)
        post.observe(x, log_bad, log_good)

    def _apply_mark(self, post: Posterior, commit: str) -> None:
        mark = self.evaluator.mark(commit)
        if mark is None or commit not in post.index:
            return
        x = post.index[commit]
        if mark.verdict == "skip":
            post.skip(x)
        elif mark.verdict == "bad":
            post.observe(x, 0.0, -MARK_LOG_ODDS)
        elif mark.verdict == "good":
            post.observe(x, -MARK_LOG_ODDS, 0.0)

    def _sync(self, post: Posterior, marked: dict[str, str], within: SearchRange) -> None:
        b = self.evaluator
        cdf = post.cdf()
        decided = {
            post.commits[i]: verdict
            for i, verdict in post.decided(self.confidence).items()
            if 0 < i < post.size - 2  # not the endpoints (git has them) nor the sentinel
        }
        if any(decided.get(c) != v for c, v in marked.items()):
            self._restart(within)
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
            self.verdicts[commit] = verdict
            runs = post.observed.get(i, 0)
            self.reasons[commit] = (
                "could not be measured"
                if verdict == "skip"
                else f"P(culprit at or before it) = {cdf[i]:.4f} after {runs} run(s)"
            )
            b.journal.verdict(commit, verdict)
        for commit in [c for c in self.verdicts if c in post.index and c not in decided]:
            del self.verdicts[commit]  # no longer decided: not what git was told

    def _outcome(self, post: Posterior) -> Found:
        best = post.best()
        group = post.commits[best.first : best.last + 1]
        sure = best.mass >= self.confidence
        if sure and (best.first == 0 or best.last == post.size - 1):
            said = "the good endpoint is already bad" if best.first == 0 else "the bad one is not"
            raise BisectorError(
                f"endpoints do not separate: the runs say {said} (probability {best.mass:.3f}); "
                "pick another range, metric or threshold"
            )
        if sure and len(group) == 1:
            return Found(group[0], [], best.mass, True)
        found = Found(None, group if sure else [], best.mass, sure, best_guess=group)
        if not sure:
            lo, hi, mass = post.smallest_range(LIKELY_MASS)
            found.likely = [c for c in post.commits[lo : hi + 1] if c != NO_CULPRIT]
            found.likely_mass = mass
        return found

    def summary(self) -> SearchSummary:
        found = self._last
        likely = None
        if found is not None and not found.sure:
            likely = LikelyRange(found.likely, round(found.likely_mass, 6))
        return SearchSummary(
            mode="posterior",
            error_rate=self.error_rate,
            likelihood=self.likelihood_name,
            parallel=self.evaluator.slots,
            rounds=dict(self.evaluator.rounds),
            confidence=None
            if found is None or found.confidence is None
            else round(found.confidence, 6),
            sure=True if found is None else found.sure,
            likely_range=likely,
            best_guess=[] if found is None or found.sure else found.best_guess,
        )
