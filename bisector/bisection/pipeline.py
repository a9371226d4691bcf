"""The run as a short pipeline: endpoints -> search -> descent -> confirmation -> revert
check -> (the next culprit's hunt, with the ones found reverted) -> report.

Every measurement goes to the journal before its verdict goes to git, and every
verdict is recomputed from journaled measurements, so a run killed at any moment
and started again with the same command repeats no finished measurement.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from bisector.backends.base import Backend
from bisector.backends.registry import backend_info
from bisector.bisection.confirm import confirm
from bisector.bisection.descent import descend, merge_path
from bisector.bisection.endpoints import EndpointCheck, Endpoints, endpoint_runs
from bisector.bisection.hunt import Hunt
from bisector.bisection.report_builder import build_report
from bisector.bisection.revert import check_revert, revert_runs
from bisector.bisection.start import (
    BackendWrapper,
    Bisection,
    SessionFactory,
    github_remote,
    open_bisection,
    prepare_bisection,
)
from bisector.cost import phases_for
from bisector.errors import BisectorError
from bisector.gitrepo import BisectSession, GitRepo
from bisector.logs.scores import Scorer
from bisector.measure.journal import Done, LikelihoodSet, ThresholdSet
from bisector.numbers import format_threshold, format_value
from bisector.pprof import diff_profiles, pairs
from bisector.report import write_reports
from bisector.report.model import EtaCheck, ProfileDiff, Report, TeardownFailure
from bisector.search.base import Found, Search, SearchRange
from bisector.search.decide import DecisionRule
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
    fresh: bool = False,
) -> Report:
    """The whole `bisector run`; raises BisectorError for anything the user must fix.

    `backend`, `rule`, `scorer`, `repo` and `session_factory` are seams for the demo,
    tests and scripts/bench_bisect.py (an in-memory history instead of git);
    `wrap_backend` is how nightly puts the backend inside its budget; `fresh` starts
    the run directory over (the earlier run set aside, see bisector.bisection.question).
    """
    prepared = prepare_bisection(settings, repo=repo, backend=backend, wrap_backend=wrap_backend)
    with open_bisection(
        prepared,
        progress=progress,
        rule=rule,
        scorer=scorer,
        session_factory=session_factory,
        slots=slots,
        fresh=fresh,
    ) as b:
        report = find_culprit(b)  # an error or an interrupt is journaled on the way out
    # The backend closed after the report was made: a failed close may leave something
    # up (an executor's Jobs, a base cluster), and the outcome says so (6) like any
    # failed teardown.
    report.teardown_failures += [
        TeardownFailure("", str(prepared.layout.root), error) for error in b.close_failed
    ]
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
    # The ETA's guesses until this run's phases are measured: the cost model's, as --dry-run.
    b.evaluator.phase_times.guess = phases_for(
        model=backend_info(s.backend).phases,
        warmup_s=s.warmup_s,
        estimate_s=s.evaluation_estimate_s,
    )
    whole = whole_range(b)
    searches = _Searches(b, whole)
    # Before the threshold exists, only the picks matter: plain split or prior quantiles.
    planner: Search = (
        searches.make(0.0, VerdictLikelihood(0.1, 0.0))
        if s.noise_aware
        else searches.make(0.0, None)
    )
    ends = EndpointCheck(b.evaluator, s, planner, whole, b.rule).check()
    shown = format_threshold(ends.threshold, s.metric, s.worse)
    b.progress.note(f"threshold {shown} ({ends.how})")
    b.journal.write(ThresholdSet(ends.threshold, ends.how))
    ahead = None
    if s.search.measure_ahead and not s.noise_aware:
        fresh = 2 * endpoint_runs(s)  # what the endpoint rounds left idle
        ahead = [j.commit for j in planner.first_picks(whole, (-fresh) % b.evaluator.slots)]
    hunts = [_hunt(b, searches, whole, ends, ahead, journal_likelihood=True)]
    unexplained = _further_culprits(b, searches, whole, ends, hunts)
    report = build_report(
        b,
        ends=ends,
        hunts=hunts,
        unexplained=unexplained,
        bisect_log=b.session.log(),
        remote=github_remote(b.repo),
    )
    report.eta = eta_check(b)
    return report


def _hunt(
    b: Bisection,
    searches: _Searches,
    whole: SearchRange,
    ends: Endpoints,
    ahead: list[str] | None,
    *,
    journal_likelihood: bool = False,
) -> Hunt:
    """Search, descend, confirm: one culprit, with the reverts in force."""
    s = b.settings
    likelihood = _likelihood(s, ends) if s.noise_aware else None
    if likelihood is not None:
        b.progress.note(likelihood.describe())
        if journal_likelihood:
            b.journal.write(LikelihoodSet(likelihood.describe()))
    search = searches.make(ends.threshold, likelihood)
    b.evaluator.runs_after_search = _descent_runs(b, whole) + _confirm_runs(b)
    found, descended, merges = _search(b, search, whole, ahead)
    confirmation = confirm(b, found, descended, ends.threshold)
    if confirmation.withdraw:
        # The safety net of early good verdicts: a regression that shows later than the
        # bad endpoint's can pass a shortened run as good and move the culprit; a commit
        # of the claim measured at full length then contradicts it. Search again with
        # full-length runs only (journaled full-length runs are reused).
        b.progress.note(f"{confirmation.withdraw}: searching again without early good verdicts")
        b.evaluator.withdraw_early_good(confirmation.withdraw)
        search.verdicts.clear()
        search.reasons.clear()
        search.same_tree.clear()
        found, descended, merges = _search(b, search, whole, None)
        confirmation = confirm(b, found, descended, ends.threshold)
    for problem in confirmation.problems:
        b.progress.note(f"not confirmed: {problem}")
    reverted = b.evaluator.reverts.culprits
    hunt = Hunt(reverted, ends, search, found, descended, merges, confirmation)
    if found.culprit is not None and confirmation.confirmed:
        hunt.profiles = _profile_diffs(b, found.culprit)
    return hunt


def _profile_diffs(b: Bisection, culprit: str) -> list[ProfileDiff]:
    """The culprit's confirmation-run profiles against its parent's (any `*.pprof` its
    backend left in their evaluation directories): what grew, marked where the culprit
    changed the code."""
    parent = b.repo.info(culprit).parents[0]
    runs = [
        [m for m in b.evaluator.runs(c, "confirm") if m.value is not None and m.eval_dir]
        for c in (culprit, parent)
    ]
    if not all(runs):
        return []
    mine, theirs = (Path(r[-1].eval_dir) for r in runs)
    if not pairs(mine, theirs):  # no backend left profiles: nothing to diff or mark
        return []
    out_dir = b.layout.root / "profiles" / culprit[:12]
    diffs = diff_profiles(mine, theirs, b.repo.changed_files(culprit), out_dir)
    for diff in diffs:
        said = diff.error or (diff.rows[0].function if diff.rows else "nothing grew")
        b.progress.note(f"profile diff ({diff.kind}) of {culprit[:12]} against its parent: {said}")
    return diffs


def _further_culprits(
    b: Bisection, searches: _Searches, whole: SearchRange, ends: Endpoints, hunts: list[Hunt]
) -> str:
    """The revert check after each confirmed culprit and, while the bad endpoint with
    every culprit found reverted still measures bad, the next hunt with them reverted.
    Returns why the culprits found may not explain the whole regression ("": they do,
    or it was not checked)."""
    s = b.settings
    metric = s.metric
    while s.revert_check and hunts[-1].confirmed:
        culprits = [h.found.culprit for h in hunts if h.found.culprit is not None]
        check = check_revert(b, culprits, ends.threshold)
        hunts[-1].revert = check
        names = ", ".join(c[:12] for c in check.reverted)
        if check.outcome != "does not restore":
            b.progress.note(f"revert check: reverting {names} on the bad endpoint: {check.outcome}")
            return ""
        value = format_value(check.value, metric)
        still = (
            f"with {names} reverted, the bad endpoint {b.bad[:12]} still measures {value} (bad "
            f"at the threshold {format_threshold(ends.threshold, metric, s.worse)})"
        )
        if len(hunts) >= s.max_culprits:
            return (
                f"{still}: more culprits may be in the range; the hunt stopped at "
                f"max_culprits = {s.max_culprits} ([run] max_culprits)"
            )
        b.progress.note(f"{still}: hunting the next culprit with them reverted")
        try:
            hunt = _next_hunt(b, searches, whole, ends)
        except BisectorError as exc:
            return f"{still}; the search for another culprit stopped: {exc}"
        if not hunt.confirmed:
            suspect = hunt.found.culprit
            why = (
                f"it named {suspect[:12]}, not confirmed: " + "; ".join(hunt.confirmation.problems)
                if suspect
                else "it ended without a single culprit"
            )
            return f"{still}; the search for another culprit with them reverted: {why}"
        hunts.append(hunt)
    return ""


def _next_hunt(b: Bisection, searches: _Searches, whole: SearchRange, ends: Endpoints) -> Hunt:
    """A hunt with the culprits in force reverted: the endpoints checked again at the
    first hunt's threshold (the good one's runs and the revert check's are reused)."""
    fixed = dataclasses.replace(b.settings, threshold=ends.threshold)
    planner = searches.make(ends.threshold, None)
    again = EndpointCheck(b.evaluator, fixed, planner, whole, b.rule).check()
    kept = Endpoints(
        ends.threshold,
        ends.how,
        again.good_value,
        again.bad_value,
        again.good_runs,
        again.bad_runs,
    )
    return _hunt(b, searches, whole, kept, None)


def eta_check(b: Bisection) -> EtaCheck:
    """The ETA said when the search began against the wall time this session took."""
    said = b.evaluator.prediction
    return EtaCheck(
        predicted_s=None if said is None else round(said.total_s, 3),
        predicted_at_s=None if said is None else said.at_s,
        actual_s=round(b.evaluator.elapsed_s(), 3),
    )


def _search(
    b: Bisection, search: Search, whole: SearchRange, ahead: list[str] | None
) -> tuple[Found, list[str], list[str]]:
    """The search over the whole range, then down into the culprit merge's branch: what
    it found, the merges it descended into, and the merges that brought the culprit in
    (for the report: the plain search bisects a branch as a whole DAG)."""
    s = b.settings
    found = search.find(whole, ahead)
    b.evaluator.runs_after_search = _confirm_runs(b)  # the descent's steps are its own now
    found, descended = descend(
        search, b.repo, found, whole, progress=b.progress, confidence=s.search.confidence
    )
    merges = descended
    if descended and found.culprit is not None and found.culprit not in descended:
        merges = merge_path(b.repo, descended[0], found.culprit)
    return found, descended, merges


def _descent_runs(b: Bisection, whole: SearchRange) -> int:
    """The descent into a merged branch, expected as the cost model does: git's steps
    over an average branch (the range's commits per first-parent commit)."""
    if not b.settings.first_parent or len(whole.commits) < 1:
        return 0
    every = len(b.repo.rev_list(b.good, b.bad, paths=b.settings.paths))
    return math.ceil(math.log2(max(every / len(whole.commits), 1.0)))


def _confirm_runs(b: Bisection) -> int:
    """The culprit and its parent measured again, and the safety net of early good
    verdicts: the culprit merge's first parent at full length (when it can be needed);
    then the revert check."""
    s = b.settings
    runs = 2 if s.noise_aware else 2 * (s.repeats // 2 + 1)
    runs += revert_runs(b) if s.revert_check else 0
    return runs + (1 if s.early_good and s.first_parent else 0)
