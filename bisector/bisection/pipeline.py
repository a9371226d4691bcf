"""The run as a short pipeline: endpoints -> search -> descent -> confirmation -> report.

Every measurement goes to the journal before its verdict goes to git, and every
verdict is recomputed from journaled measurements, so a run killed at any moment
and started again with the same command repeats no finished measurement.
"""

from __future__ import annotations

from bisector.backends.base import Backend
from bisector.bisection.descent import descend, merge_path
from bisector.bisection.endpoints import EndpointCheck, Endpoints, endpoint_runs
from bisector.bisection.report_builder import build_report
from bisector.bisection.start import (
    BackendWrapper,
    Bisection,
    SessionFactory,
    github_remote,
    open_bisection,
    prepare_bisection,
)
from bisector.gitrepo import BisectSession, GitRepo
from bisector.report import Report, write_reports
from bisector.search.base import Found, Search, SearchRange
from bisector.search.decide import ConfirmRule, DecisionRule
from bisector.search.early import Scorer
from bisector.search.journal import Done, Interrupted, LikelihoodSet, ThresholdSet
from bisector.search.likelihood import Likelihood, MetricLikelihood, VerdictLikelihood
from bisector.search.noisy import PosteriorSearch, automatic_budget
from bisector.search.plain import GitBisectSearch
from bisector.search.progress import Progress
from bisector.settings import RunSettings


def run_bisection(
    settings: RunSettings,
    *,
    progress: Progress | None = None,
    backend: Backend | None = None,
    wrap_backend: BackendWrapper | None = None,
    rule: DecisionRule | None = None,
    scorer: Scorer | None = None,
    repo: GitRepo | None = None,
    session_factory: SessionFactory = BisectSession,
    slots: int | None = None,
    write_report: bool = True,
) -> Report:
    """The whole `bisector run`; raises BisectorError for anything the user must fix.

    `backend`, `rule`, `scorer`, `repo` and `session_factory` are seams for the demo,
    tests and scripts/bench_bisect.py (an in-memory history instead of git);
    `wrap_backend` is how nightly puts the backend inside its budget.
    """
    prepared = prepare_bisection(settings, repo=repo, backend=backend, wrap_backend=wrap_backend)
    with open_bisection(
        prepared,
        progress=progress,
        rule=rule,
        scorer=scorer,
        session_factory=session_factory,
        slots=slots,
    ) as b:
        try:
            report = find_culprit(b)
        except KeyboardInterrupt:
            b.journal.write(Interrupted())
            raise
    if write_report:
        write_reports(report, prepared.layout.root)
    b.journal.write(Done(report.culprit.commit if report.culprit else None))
    return report


def whole_range(b: Bisection) -> SearchRange:
    s = b.settings
    commits = b.repo.rev_list(b.good, b.bad, first_parent=s.first_parent, paths=s.paths)
    commits = commits if commits and commits[-1] == b.bad else [*commits, b.bad]
    return SearchRange(b.good, b.bad, commits, s.first_parent, chain=s.first_parent)


def _likelihood(settings: RunSettings, ends: Endpoints) -> Likelihood:
    if settings.search.likelihood == "metric":
        return MetricLikelihood.fit(ends.good_runs, ends.bad_runs)
    return VerdictLikelihood(settings.search.error_rate, ends.threshold, settings.worse)


class _Searches:
    """The search is chosen once the endpoints set the threshold; until then the
    endpoint check asks the plain one or the prior for the first picks."""

    def __init__(self, b: Bisection, whole: SearchRange) -> None:
        self.b = b
        s = b.settings.search
        self.budget = s.max_evaluations or automatic_budget(len(whole.commits))

    def make(self, threshold: float, likelihood: Likelihood | None) -> Search:
        b, s = self.b, self.b.settings
        if likelihood is None:
            return GitBisectSearch(b.evaluator, b.session, b.rule, threshold, paths=s.paths)
        return PosteriorSearch(
            b.evaluator,
            b.session,
            likelihood,
            budget=self.budget,
            confidence=s.search.confidence,
            measure_ahead=s.search.measure_ahead,
            paths=s.paths,
            likelihood_name=s.search.likelihood,
            error_rate=s.search.error_rate,
        )


def find_culprit(b: Bisection) -> Report:
    s = b.settings
    whole = whole_range(b)
    searches = _Searches(b, whole)
    # Before the threshold exists, only the picks matter: plain split or prior quantiles.
    planner: Search = (
        searches.make(0.0, VerdictLikelihood(0.1, 0.0))
        if s.noise_aware
        else searches.make(0.0, None)
    )
    ends = EndpointCheck(b.evaluator, s, planner, whole, b.rule).check()
    b.progress.note(f"threshold {ends.threshold:g} ({ends.how})")
    b.journal.write(ThresholdSet(ends.threshold, ends.how))
    likelihood = _likelihood(s, ends) if s.noise_aware else None
    if likelihood is not None:
        b.progress.note(likelihood.describe())
        b.journal.write(LikelihoodSet(likelihood.describe()))
    search = searches.make(ends.threshold, likelihood)
    ahead = None
    if s.search.measure_ahead and not s.noise_aware:
        fresh = 2 * endpoint_runs(s)  # what the endpoint rounds left idle
        ahead = [j.commit for j in search.first_picks(whole, (-fresh) % b.evaluator.slots)]
    found, merges = _search(b, search, whole, ahead)
    bisect_log = b.session.log()
    confirmation = _confirm(b, found, ends.threshold)
    contradicted = _early_good_contradicted(b, found, merges, confirmation, ends.threshold)
    if contradicted:
        # The safety net of early good verdicts: a regression that shows later than the
        # bad endpoint's can pass a shortened run as good and move the culprit later;
        # the parent's full-length confirmation then measures bad. Search again with
        # full-length runs only (journaled full-length runs are reused).
        b.progress.note(f"{contradicted}: searching again without early good verdicts")
        b.evaluator.withdraw_early_good(contradicted)
        search.verdicts.clear()
        search.reasons.clear()
        found, merges = _search(b, search, whole, None)
        bisect_log = b.session.log()
        confirmation = _confirm(b, found, ends.threshold)
    return build_report(
        b,
        ends=ends,
        found=found,
        merges=merges,
        confirmation=confirmation,
        search=search,
        bisect_log=bisect_log,
        remote=github_remote(b.repo),
    )


def _search(
    b: Bisection, search: Search, whole: SearchRange, ahead: list[str] | None
) -> tuple[Found, list[str]]:
    """The search over the whole range, then down into the culprit merge's branch."""
    s = b.settings
    found = search.find(whole, ahead)
    found, merges = descend(
        search, b.repo, found, whole, progress=b.progress, confidence=s.search.confidence
    )
    if merges and found.culprit is not None and found.culprit not in merges:
        merges = merge_path(b.repo, merges[0], found.culprit)
    return found, merges


def _early_good_contradicted(
    b: Bisection, found: Found, merges: list[str], confirmation: dict[str, str], threshold: float
) -> str:
    """Why the early good verdicts of this run cannot stand ("" when they can)."""
    if found.culprit is None or b.evaluator.early_good_withdrawn:
        return ""
    early_goods = [
        m for m in b.evaluator.used.values() if m.phase == "bisect" and m.early_verdict == "good"
    ]
    if not early_goods:
        return ""
    said = f"after {len(early_goods)} search run(s) ended early as good"
    parent = b.repo.info(found.culprit).parents[0]
    if confirmation.get(parent) == "bad":
        return f"the culprit's parent {parent[:12]} measured bad at full length, {said}"
    if not merges:
        return ""
    # A culprit inside a merged branch has a branch commit for parent: good at full
    # length when the branch forked before the regression a wrong early good passed. The
    # commit the first-parent search called good is the merge's first parent: measure it.
    before = b.repo.info(merges[0]).parents[0]
    if before in (b.good, parent):
        return ""
    if not any(m.early_verdict == "good" for m in b.evaluator.runs(before, "bisect")):
        return ""  # good at full length (or by hand): the line turned bad at the merge
    why = "the culprit merge's first parent, at full length (early good verdicts were used)"
    if b.evaluator.decide(before, threshold, b.rule, "confirm", why=why).verdict != "bad":
        return ""
    return (
        f"the culprit merge {merges[0][:12]}'s first parent {before[:12]} measured bad at "
        f"full length, {said}"
    )


def _confirm(b: Bisection, found: Found, threshold: float) -> dict[str, str]:
    """Measure the culprit and its parent again (fresh runs, phase `confirm`)."""
    if found.culprit is None:
        return {}
    parent = b.repo.info(found.culprit).parents[0]
    b.evaluator.expect(0)
    pair = [found.culprit, parent]
    why = "confirming the culprit against its parent"
    # Runs that may flip (a noise model): a disagreeing confirmation run is measured
    # again, so one flipped run does not undo a culprit the posterior is sure of.
    rules: list[DecisionRule] = (
        [
            ConfirmRule("bad", max(3, b.settings.repeats), b.settings.worse),
            ConfirmRule("good", max(3, b.settings.repeats), b.settings.worse),
        ]
        if b.settings.noise_aware
        else [b.rule, b.rule]
    )
    if b.evaluator.slots >= 2:
        decisions = b.evaluator.decide_each(pair, threshold, rules, "confirm", why)
    else:
        decisions = [
            b.evaluator.decide_each([c], threshold, [r], "confirm", why)[0]
            for c, r in zip(pair, rules, strict=True)
        ]
    return {c: d.verdict or "skip" for c, d in zip(pair, decisions, strict=True)}
