"""What `--dry-run` prints: range size, expected evaluations, wall time, the commands."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend, Candidate
from bisector.bisection.start import prepare_bisection
from bisector.search.decide import MajorityRule
from bisector.settings import RunSettings


@dataclass(frozen=True)
class Plan:
    good: str
    bad: str
    range_size: int
    expected_evaluations: int
    estimate_s: float | None  # total wall time, None without [run] estimate
    commands: list[str] = field(default_factory=list)  # `#` lines say when the next ones run
    run_dir: Path = Path()


def _log2_steps(size: float) -> int:
    return math.ceil(math.log2(size)) if size > 1 else 0


def expected_evaluations(range_size: int, runs_per_commit: int, descent_size: float = 1.0) -> int:
    """Endpoints (2), bisection steps, the descent into a merged branch, confirmation (2)."""
    steps = _log2_steps(range_size) + _log2_steps(descent_size)
    return (2 + steps + 2) * runs_per_commit


def plan_bisection(settings: RunSettings, backend: Backend | None = None) -> Plan:
    prepared = prepare_bisection(settings, backend=backend)
    repo, good, bad = prepared.repo, prepared.good, prepared.bad
    size = len(repo.rev_list(good, bad, first_parent=settings.first_parent, paths=settings.paths))
    descent = 1.0
    if settings.first_parent and size:
        # Descending into the culprit merge bisects its branch: an average PR's commits.
        descent = len(repo.rev_list(good, bad, paths=settings.paths)) / size
    runs = MajorityRule(settings.repeats).planned_runs()
    evaluations = expected_evaluations(size, runs, descent)
    layout = prepared.layout
    # The run's first evaluation is the good endpoint's, in slot 0: show exactly its commands.
    sample = Candidate(good, layout.slot_worktree(0), layout.eval_dir(1, good))
    total = evaluations * settings.estimate_s if settings.estimate_s else None
    return Plan(good, bad, size, evaluations, total, prepared.backend.plan(sample), layout.root)
