"""What `--dry-run` prints: range size, the cost model's evaluations, rounds, time, money.

`estimate` is the one way a run's settings become the cost model's figures: `--dry-run`
prints it before a run and the report shows it beside what the run used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend, Candidate
from bisector.backends.registry import backend_info
from bisector.bisection.start import prepare_bisection
from bisector.cost import (
    Cost,
    Expected,
    PhaseModel,
    Phases,
    SearchShape,
    cost,
    expected_search,
    phases_for,
)
from bisector.durations import format_duration
from bisector.gitrepo import GitRepo
from bisector.search.decide import MajorityRule
from bisector.settings import RunSettings


@dataclass(frozen=True)
class Plan:
    good: str
    bad: str
    range_size: int
    expected_evaluations: int
    estimate_s: float | None  # total wall time, None without known phase durations
    commands: list[str] = field(default_factory=list)  # `#` lines say when the next ones run
    run_dir: Path = Path()
    shape: SearchShape | None = None
    expected: Expected | None = None
    phases: Phases | None = None
    cost: Cost | None = None


def search_shape(settings: RunSettings, range_size: int, descent_size: float) -> SearchShape:
    """The cost model's view of a run's settings (flags and config alike)."""
    s = settings.search
    return SearchShape(
        range_size=range_size,
        descent_size=descent_size,
        repeats=MajorityRule(settings.repeats).planned_runs(),
        error_rate=s.error_rate,
        likelihood=s.likelihood,
        confidence=s.confidence,
        parallel=s.parallel,
        endpoint_runs=s.endpoint_runs,
        revert_check=settings.revert_check,
    )


def expected_evaluations(range_size: int, runs_per_commit: int, descent_size: float = 1.0) -> int:
    """Plain git bisect, one slot: endpoints, search, descent, confirmation (the cost model)."""
    shape = SearchShape(range_size, descent_size, repeats=runs_per_commit)
    return expected_search(shape).evaluations


@dataclass(frozen=True)
class Estimate:
    """The cost model's figures for one run's settings and range."""

    shape: SearchShape
    expected: Expected
    phases: Phases | None  # None: no phase durations known for the backend
    cost: Cost | None  # None without phases: evaluations and rounds only
    basis: str  # where the phase durations come from, or why there are none


MEASURED_BASIS = "this run's measured phase times, the mean of each"


def phases_basis(settings: RunSettings) -> str:
    """Where `phases_for` takes a run's phase durations from (said next to the figures)."""
    model = backend_info(settings.backend).phases
    if settings.estimate_s is not None:
        given = f"[run] estimate {format_duration(settings.estimate_s)}"
        if model is PhaseModel.SIMULATED:
            return f"{given}, all of it simulated warmup"
        return f"{given} per evaluation, split as in the 2017 kubemark job"
    if model is PhaseModel.KUBEMARK_2017:
        return "the 2017 kubemark job's phases (ci-kubernetes-kubemark-gce-scale)"
    own = settings.evaluation_estimate_s
    if own is not None:
        return (
            f"the {settings.backend} backend's own estimate, {format_duration(own)} an "
            "evaluation, from the cluster its table simulates"
        )
    return (
        f"no phase durations for the {settings.backend} backend: "
        "set [run] estimate to one evaluation's time"
    )


def estimate(
    settings: RunSettings, repo: GitRepo, good: str, bad: str, *, measured: Phases | None = None
) -> Estimate:
    """The cost model applied to `settings` and the range good..bad (resolved commits);
    with `measured`, one evaluation's phases are those a run measured (`[run] estimate`
    and the backend's guesses are for before any measurement)."""
    size = len(repo.rev_list(good, bad, first_parent=settings.first_parent, paths=settings.paths))
    descent = 1.0
    if settings.first_parent and size:
        # Descending into the culprit merge bisects its branch: an average PR's commits.
        descent = len(repo.rev_list(good, bad, paths=settings.paths)) / size
    shape = search_shape(settings, size, descent)
    expected = expected_search(shape)
    phases = measured or phases_for(
        model=backend_info(settings.backend).phases,
        warmup_s=settings.warmup_s,
        estimate_s=settings.evaluation_estimate_s,
    )
    costed = None
    if phases is not None:
        costed = cost(
            expected,
            phases,
            price_per_cluster_hour=settings.price_per_cluster_hour,
            prefetch_hit=prefetch_share(settings),
        )
    basis = MEASURED_BASIS if measured is not None else phases_basis(settings)
    return Estimate(shape, expected, phases, costed, basis)


def prefetch_share(settings: RunSettings) -> float:
    """The share of builds `[run] prefetch_builds` hides behind a running cluster.

    The builds ahead are git's own next picks (bisector.search.plain): with K slots a
    round can leave K + 1 parts of K picks each, so K(K + 1) builds ahead cover every
    outcome; fewer cover that share of them. Warmups stay whole in the model: how early
    a run ends depends on the regression, which no setting tells beforehand.
    """
    if settings.prefetch_builds <= 0:
        return 0.0
    k = max(1, settings.search.parallel)
    return min(1.0, settings.prefetch_builds / (k * (k + 1)))


def plan_bisection(settings: RunSettings, backend: Backend | None = None) -> Plan:
    prepared = prepare_bisection(settings, backend=backend)
    model = estimate(settings, prepared.repo, prepared.good, prepared.bad)
    costed = model.cost
    layout = prepared.layout
    # The run's first evaluation is the good endpoint's, in slot 0: show exactly its commands.
    sample = Candidate(prepared.good, layout.slot_worktree(0), layout.eval_dir(1, prepared.good))
    return Plan(
        prepared.good,
        prepared.bad,
        model.shape.range_size,
        model.expected.evaluations,
        None if costed is None else costed.wall_s,
        prepared.backend.plan(sample),
        layout.root,
        model.shape,
        model.expected,
        model.phases,
        costed,
    )
