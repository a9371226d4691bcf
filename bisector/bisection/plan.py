"""What `--dry-run` prints: range size, the cost model's evaluations, rounds, time, money."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend, Candidate
from bisector.bisection.start import prepare_bisection
from bisector.cost import Cost, Expected, Phases, SearchShape, cost, expected_search, phases_for
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
    )


def expected_evaluations(range_size: int, runs_per_commit: int, descent_size: float = 1.0) -> int:
    """Plain git bisect, one slot: endpoints, search, descent, confirmation (the cost model)."""
    shape = SearchShape(range_size, descent_size, repeats=runs_per_commit)
    return expected_search(shape).evaluations


def plan_bisection(settings: RunSettings, backend: Backend | None = None) -> Plan:
    prepared = prepare_bisection(settings, backend=backend)
    repo, good, bad = prepared.repo, prepared.good, prepared.bad
    size = len(repo.rev_list(good, bad, first_parent=settings.first_parent, paths=settings.paths))
    descent = 1.0
    if settings.first_parent and size:
        # Descending into the culprit merge bisects its branch: an average PR's commits.
        descent = len(repo.rev_list(good, bad, paths=settings.paths)) / size
    shape = search_shape(settings, size, descent)
    expected = expected_search(shape)
    phases = phases_for(
        backend=settings.backend, warmup_s=settings.warmup_s, estimate_s=settings.estimate_s
    )
    costed = None
    if phases is not None:
        costed = cost(expected, phases, price_per_cluster_hour=settings.price_per_cluster_hour)
    layout = prepared.layout
    # The run's first evaluation is the good endpoint's, in slot 0: show exactly its commands.
    sample = Candidate(good, layout.slot_worktree(0), layout.eval_dir(1, good))
    return Plan(
        good,
        bad,
        size,
        expected.evaluations,
        None if costed is None else costed.wall_s,
        prepared.backend.plan(sample),
        layout.root,
        shape,
        expected,
        phases,
        costed,
    )
