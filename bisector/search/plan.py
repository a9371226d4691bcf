"""Opening and checking a bisection's inputs, and the plan `--dry-run` prints."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend, BackendContext, Candidate
from bisector.backends.registry import create_backend
from bisector.gitrepo import GitRepo
from bisector.search.decide import MajorityRule
from bisector.search.options import RunOptions


@dataclass(frozen=True)
class Plan:
    """What --dry-run prints."""

    good: str
    bad: str
    range_size: int
    expected_evaluations: int
    estimate_s: float | None  # total wall time, None without [run] estimate
    commands: list[str] = field(default_factory=list)  # `#` lines say when the next ones run
    run_dir: Path = Path()


def open_range(options: RunOptions) -> tuple[GitRepo, str, str]:
    repo = GitRepo(options.repo)
    good, bad = repo.resolve(options.good), repo.resolve(options.bad)
    repo.check_range(good, bad)
    return repo, good, bad


def default_run_dir(repo: GitRepo, options: RunOptions, good: str, bad: str) -> Path:
    question = [options.metric, options.threshold, options.first_parent, list(options.paths)]
    key = options.fingerprint() + json.dumps([*question, options.repeats], default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return repo.common_dir / "bisector" / "runs" / f"{good[:12]}-{bad[:12]}-{digest}"


def _log2_steps(size: float) -> int:
    return math.ceil(math.log2(size)) if size > 1 else 0


def expected_evaluations(range_size: int, runs_per_commit: int, descent_size: float = 1.0) -> int:
    """Endpoints (2), bisection steps, the descent into a merged branch, confirmation (2)."""
    steps = _log2_steps(range_size) + _log2_steps(descent_size)
    return (2 + steps + 2) * runs_per_commit


def plan_bisection(options: RunOptions, backend: Backend | None = None) -> Plan:
    repo, good, bad = open_range(options)
    run_dir = (options.run_dir or default_run_dir(repo, options, good, bad)).resolve()
    size = len(repo.rev_list(good, bad, first_parent=options.first_parent, paths=options.paths))
    descent = 1.0
    if options.first_parent and size:
        # Descending into the culprit merge bisects its branch: an average PR's commits.
        descent = len(repo.rev_list(good, bad, paths=options.paths)) / size
    runs = MajorityRule(options.repeats).planned_runs()
    evaluations = expected_evaluations(size, runs, descent)
    context = BackendContext(options.backend_section(), run_dir, options.warmup_s, options.seed)
    backend = backend or create_backend(options.backend, context)
    # The run's first evaluation is the good endpoint's, in slot 0: show exactly its commands.
    sample = Candidate(
        good, run_dir / "worktrees" / "slot-0", run_dir / "evals" / f"001-{good[:12]}"
    )
    total = evaluations * options.estimate_s if options.estimate_s else None
    return Plan(good, bad, size, evaluations, total, backend.plan(sample), run_dir)
