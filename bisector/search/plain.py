"""Plain git bisect: each commit's verdict from its own runs (the repeats rule), fed to git.

git bisect decides what is left; with K slots a round measures K commits splitting
it into K + 1 parts (SplitStrategy). Verdicts are recomputed from journaled
measurements, so a resumed run repeats no finished measurement.
"""

from __future__ import annotations

import math

from bisector.gitrepo import BisectSession, GitFailure, GitRepo
from bisector.measure.evaluator import Evaluator
from bisector.report.model import SearchSummary
from bisector.search.ahead import next_candidates
from bisector.search.base import Found, Job, SearchRange
from bisector.search.decide import Decision, DecisionRule, SameTree
from bisector.search.strategy import SearchState, SplitStrategy, Strategy


class GitBisectSearch:
    def __init__(
        self,
        evaluator: Evaluator,
        session: BisectSession,
        rule: DecisionRule,
        threshold: float,
        *,
        paths: tuple[str, ...] = (),
        strategy: Strategy | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.repo: GitRepo = evaluator.repo
        self.session = session
        self.rule = rule
        self.threshold = threshold
        self.paths = paths
        self.strategy = strategy or SplitStrategy()
        self.verdicts: dict[str, str] = {}
        self.reasons: dict[str, str] = {}
        self.same_tree: dict[str, SameTree] = {}

    def first_picks(self, whole: SearchRange, k: int) -> list[Job]:
        """The k-way split of the range: the verdicts `find` takes first, once the
        endpoints have checked out (until then nothing reads them)."""
        inside = whole.commits[:-1]
        if not inside or k <= 0:
            return []
        if k == 1:  # git's own first pick, exactly (a guess that misses wastes a build)
            picks = self._git_picks(whole.bad, [whole.good], whole.first_parent)
        else:  # SplitStrategy's first picks: it splits git's list of every commit left
            walked = self.repo.rev_list(whole.good, whole.bad, paths=self.paths)
            inside = [c for c in walked if c != whole.bad]
            picks = [inside[(j * len(inside)) // (k + 1)] for j in range(1, k + 1)]
        why = f"split point of {len(inside)} commits, measured beside the endpoints"
        return [Job(c, "bisect", why) for c in dict.fromkeys(picks) if c in inside]

    def descent_range(self, merge: str) -> SearchRange:
        """git bisect over the merge's whole branch (every commit, nested merges too)."""
        parent = self.repo.info(merge).parents[0]
        commits = self.repo.rev_list(parent, merge, paths=self.paths)
        commits = commits if commits and commits[-1] == merge else [*commits, merge]
        return SearchRange(parent, merge, commits, first_parent=False, chain=False, merge=merge)

    def find(self, within: SearchRange, ahead: list[str] | None = None) -> Found:
        session = self.session
        session.start(within.good, within.bad, first_parent=within.first_parent, paths=self.paths)
        state = SearchState(session, within.good, within.bad, self.threshold)
        goods, bad_end = [within.good], within.bad  # git's bounds, for the next picks
        walked = set(within.commits) if within.first_parent else set()
        while not session.done:
            remaining = session.remaining()
            # What a person counts: on a first-parent walk git's list holds the merged
            # branches' commits too (119 "left" of a walk over 39 merges).
            count = len(walked & set(remaining)) if walked else len(remaining)
            steps = math.ceil(math.log2(count)) if count > 1 else 0
            self.evaluator.expect(steps)
            picks = [c for c in ahead or [] if c in remaining and self._decided(c)]
            ahead = None
            picks = picks or self.strategy.choose(state, self.evaluator.slots)
            if not picks:
                break
            # Builds worth making while this round's clusters run (prefetch_builds).
            if self.evaluator.slots == 1:
                self.evaluator.upcoming(self._next_picks(within, picks[0], goods, bad_end))
            else:  # SplitStrategy's picks on git's remaining list (newest first)
                left = [c for c in reversed(remaining[1:]) if state.verdicts.get(c) != "skip"]
                self.evaluator.upcoming(next_candidates(left, picks, self.evaluator.slots))
            kind = "first-parent commits" if walked else "commits"
            why = f"git bisect midpoint, {count} {kind} left"
            decisions = self.evaluator.decide_all(picks, self.threshold, self.rule, "bisect", why)
            verdicts = [d.verdict or "skip" for d in decisions]
            for commit, verdict, decision in _mark_order(picks, verdicts, decisions):
                state.verdicts[commit] = verdict
                self.verdicts[commit] = verdict
                self.reasons[commit] = decision.reason
                if decision.same_tree is not None:
                    self.same_tree[commit] = decision.same_tree
                session.mark(commit, verdict)
                self.evaluator.journal.verdict(commit, verdict)
                said = f" ({decision.reason})" if decision.same_tree is not None else ""
                line = f"{commit[:12]} is {verdict}{said}"
                if not said and self.evaluator.said_side.pop(commit, None) == verdict:
                    self.evaluator.progress.detail(line)  # its evaluation's line said it
                else:
                    self.evaluator.progress.note(line)
                if verdict == "good":
                    goods.append(commit)
                elif verdict == "bad":
                    bad_end = commit  # the oldest bad is marked last (see _mark_order)
                if session.done:
                    break
        first_bad = session.first_bad
        return Found(first_bad, [] if first_bad else session.remaining())

    def _next_picks(
        self, within: SearchRange, pick: str, goods: list[str], bad_end: str
    ) -> list[str]:
        """git's next pick for each verdict on `pick` (bad, then good): one of them is the
        next commit measured. An outcome that leaves nothing names a culprit; when that is
        a merge on the walked chain, the next pick is the first inside its branch."""
        out: list[str] = []
        for bad, good in ((pick, goods), (bad_end, [*goods, pick])):
            nxt = self._git_picks(bad, good, within.first_parent)
            if not nxt and within.chain and bad != within.merge:
                try:
                    info = self.repo.info(bad)
                except GitFailure:
                    continue
                if info.is_merge:
                    nxt = self._git_picks(bad, [info.parents[0]], False)
            out += nxt
        return list(dict.fromkeys(out))

    def _git_picks(self, bad: str, goods: list[str], first_parent: bool) -> list[str]:
        """git's pick between `goods` and `bad` as a list ([] when none, or when git fails:
        a guess at a build to make ahead must never stop the run)."""
        try:
            pick = self.repo.bisect_midpoint(
                bad, goods, first_parent=first_parent, paths=self.paths
            )
        except GitFailure:
            return []
        return [pick] if pick else []

    def _decided(self, commit: str) -> bool:
        """Whether the journaled runs of `commit` decide its verdict without another run."""
        found = self.evaluator.runs(commit, "bisect")
        values = [m.value for m in found]
        return bool(found) and self.rule.decide(values, self.threshold).verdict is not None

    def summary(self) -> SearchSummary:
        return SearchSummary(
            mode="git-bisect",
            parallel=self.evaluator.slots,
            rounds=dict(self.evaluator.rounds),
        )


def _mark_order(
    picks: list[str], verdicts: list[str], decisions: list[Decision]
) -> list[tuple[str, str, Decision]]:
    """Goods and skips first, then bads newest first: `git bisect bad X` moves the bad
    end to X even when X is newer, so the oldest bad must be marked last.
    `picks` are oldest first (SplitStrategy's order)."""
    triples = list(zip(picks, verdicts, decisions, strict=True))
    return [t for t in triples if t[1] != "bad"] + [t for t in reversed(triples) if t[1] == "bad"]
