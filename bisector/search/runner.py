"""`run_bisection`: endpoints, threshold, the git bisect loop, merge descent, confirmation.

Every measurement goes to the journal before its verdict goes to git, and every
verdict is recomputed from journaled measurements, so a run killed at any moment
and started again with the same command repeats no finished measurement.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import signal
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from bisector.backends.base import Backend, BackendContext, Candidate
from bisector.backends.registry import create_backend
from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import BisectSession, GitRepo
from bisector.logs import Scores, metric_value
from bisector.search.decide import DecisionRule, MajorityRule, calibrate_threshold
from bisector.search.journal import Journal
from bisector.search.measure import Measurement, evaluate_candidate
from bisector.search.options import RunOptions
from bisector.search.progress import PlainProgress, Progress
from bisector.search.report import Report, build_report
from bisector.search.strategy import GitBisectStrategy, SearchState, Strategy


@dataclass(frozen=True)
class Plan:
    """What --dry-run prints."""

    good: str
    bad: str
    range_size: int
    expected_evaluations: int
    estimate_s: float | None  # total wall time, None without [run] estimate
    commands: list[str] = field(default_factory=list)
    run_dir: Path = Path()


def _open(options: RunOptions) -> tuple[GitRepo, str, str]:
    repo = GitRepo(options.repo)
    good, bad = repo.resolve(options.good), repo.resolve(options.bad)
    repo.check_range(good, bad)
    metric_value(Scores(), options.metric)  # unknown metric: one clear error before any work
    return repo, good, bad


def default_run_dir(repo: GitRepo, options: RunOptions, good: str, bad: str) -> Path:
    question = [options.metric, options.threshold, options.first_parent, list(options.paths)]
    key = options.fingerprint() + json.dumps([*question, options.repeats], default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return repo.common_dir / "bisector" / "runs" / f"{good[:12]}-{bad[:12]}-{digest}"


def expected_evaluations(range_size: int, runs_per_commit: int) -> int:
    steps = math.ceil(math.log2(range_size)) if range_size > 1 else 0
    return (2 + steps + 2) * runs_per_commit


def plan_bisection(options: RunOptions, backend: Backend | None = None) -> Plan:
    repo, good, bad = _open(options)
    run_dir = options.run_dir or default_run_dir(repo, options, good, bad)
    size = len(repo.rev_list(good, bad, first_parent=options.first_parent, paths=options.paths))
    evaluations = expected_evaluations(size, MajorityRule(options.repeats).planned_runs())
    context = BackendContext(options.backend_section(), run_dir, options.warmup_s, options.seed)
    backend = backend or create_backend(options.backend, context)
    sample = Candidate(bad, run_dir / "worktrees" / "slot-0", run_dir / "evals" / "001")
    total = evaluations * options.estimate_s if options.estimate_s else None
    return Plan(good, bad, size, evaluations, total, backend.plan(sample), run_dir)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so every `finally` (teardown) runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Bisection:
    def __init__(
        self,
        *,
        options: RunOptions,
        repo: GitRepo,
        journal: Journal,
        backend: Backend,
        rule: DecisionRule,
        progress: Progress,
        run_dir: Path,
    ) -> None:
        self.options = options
        self.repo = repo
        self.journal = journal
        self.backend = backend
        self.rule = rule
        self.progress = progress
        self.run_dir = run_dir
        self.used: dict[str, Measurement] = {}  # every measurement a verdict rested on
        self.verdicts: dict[str, str] = {}
        self.reasons: dict[str, str] = {}
        self.slot_worktrees: set[Path] = set()
        self.steps_left: int | None = None

    def measure(self, commit: str, tree: str, phase: str, slot: int = 0) -> Measurement:
        worktree = self.run_dir / "worktrees" / f"slot-{slot}"
        self.slot_worktrees.add(worktree)
        self.repo.add_worktree(worktree, commit)
        eval_dir = self.run_dir / "evals" / f"{len(self.journal.own) + 1:03d}-{commit[:12]}"
        candidate = Candidate(commit, worktree, eval_dir, slot)
        self.progress.status(f"{phase}: evaluating", commit, self.steps_left)
        m = evaluate_candidate(
            self.backend,
            candidate,
            metric=self.options.metric,
            tree=tree,
            phase=phase,
            launch_attempts=self.options.launch_attempts,
            retry_wait_s=self.options.retry_wait_s,
        )
        self.journal.add(m)
        shown = "no value" if m.value is None else f"{self.options.metric}={m.value:g}"
        why = f" ({m.reason})" if m.reason else ""
        self.progress.note(f"measured {commit[:12]} [{phase}]: {shown}{why} in {m.duration_s:g}s")
        return m

    def runs(self, commit: str, tree: str, phase: str) -> list[Measurement]:
        found = self.journal.for_tree(tree, confirm=phase == "confirm")
        for m in found:
            self.used[m.id] = m
        return found

    def measure_n(self, commit: str, phase: str, n: int) -> list[Measurement]:
        """At least `n` runs of `commit` (fewer measured when the journal has some)."""
        tree = self.repo.tree_of(commit)
        found = self.runs(commit, tree, phase)
        while len(found) < n:
            m = self.measure(commit, tree, phase)
            self.used[m.id] = m
            found.append(m)
        return found

    def verdict(self, commit: str, threshold: float, phase: str = "bisect", slot: int = 0) -> str:
        tree = self.repo.tree_of(commit)
        while True:
            found = self.runs(commit, tree, phase)
            decision = self.rule.decide([m.value for m in found], threshold)
            if decision.verdict is not None:
                reason = decision.reason
                if decision.verdict == "skip" and found:
                    reason = found[-1].reason or reason
                if phase != "confirm":
                    self.verdicts[commit], self.reasons[commit] = decision.verdict, reason
                return decision.verdict
            self.measure(commit, tree, phase, slot)  # journaled; the next pass sees it


def run_bisection(
    options: RunOptions,
    *,
    backend: Backend | None = None,
    strategy: Strategy | None = None,
    rule: DecisionRule | None = None,
    progress: Progress | None = None,
) -> Report:
    """The whole `bisector run`; raises BisectorError for anything the user must fix."""
    repo, good, bad = _open(options)
    run_dir = options.run_dir or default_run_dir(repo, options, good, bad)
    progress = progress or PlainProgress(estimate_s=options.estimate_s)
    rule = rule or MajorityRule(options.repeats)
    strategy = strategy or GitBisectStrategy()
    context = BackendContext(options.backend_section(), run_dir, options.warmup_s, options.seed)
    backend = backend or create_backend(options.backend, context)  # config errors before any state
    with repo.lock(), sigterm_as_interrupt():
        run_dir.mkdir(parents=True, exist_ok=True)
        cache = repo.common_dir / "bisector" / "measurements.jsonl"
        journal = Journal(run_dir, cache, options.fingerprint())
        if journal.last("start") is None:
            journal.write("start", good=good, bad=bad, command=options.resume_command)
        else:
            journal.write("resume", command=options.resume_command)
        session = BisectSession(repo, run_dir / "worktrees" / "bisect")
        bisection = _Bisection(
            options=options,
            repo=repo,
            journal=journal,
            backend=backend,
            rule=rule,
            progress=progress,
            run_dir=run_dir,
        )
        try:
            try:
                backend.setup()
            except InfraError as exc:
                raise BisectorError(
                    f"backend {options.backend} could not start: {exc.reason}"
                ) from None
            report = _search(bisection, session, strategy, good, bad)
        except KeyboardInterrupt:
            journal.write("interrupted")
            raise
        finally:
            with contextlib.suppress(InfraError):
                backend.close()
            session.close()
            for worktree in bisection.slot_worktrees:
                repo.remove_worktree(worktree)
            progress.stop()
        report.write(run_dir)
        journal.write("done", culprit=report.culprit["commit"] if report.culprit else None)
        return report


def _endpoint_value(runs: list[Measurement], which: str, commit: str) -> float:
    values = [m.value for m in runs if m.value is not None]
    if not values:
        reason = runs[-1].reason if runs else "not measured"
        raise BisectorError(
            f"the {which} endpoint {commit[:12]} could not be measured ({reason}); "
            "fix the backend or the metric and rerun the same command"
        )
    return float(statistics.median(values))


def _threshold(b: _Bisection, good: str, bad: str) -> tuple[float, str, float, float]:
    runs_good = b.measure_n(good, "endpoint", b.options.repeats)
    runs_bad = b.measure_n(bad, "endpoint", b.options.repeats)
    good_value = _endpoint_value(runs_good, "good", good)
    bad_value = _endpoint_value(runs_bad, "bad", bad)
    if b.options.threshold is not None:
        threshold, how = b.options.threshold, "given"
    else:
        threshold, how = calibrate_threshold(good_value, bad_value)
    verdicts = (b.verdict(good, threshold, "endpoint"), b.verdict(bad, threshold, "endpoint"))
    if verdicts != ("good", "bad"):
        raise BisectorError(
            f"endpoints do not separate at threshold {threshold:g}: good {good[:12]} scored "
            f"{good_value:g} ({verdicts[0]}), bad {bad[:12]} scored {bad_value:g} "
            f"({verdicts[1]}); pick another range, metric or threshold"
        )
    return threshold, how, good_value, bad_value


def _bisect(b: _Bisection, session: BisectSession, strategy: Strategy, state: SearchState) -> None:
    while not session.done:
        remaining = len(session.remaining())
        b.steps_left = math.ceil(math.log2(remaining)) if remaining > 1 else 0
        picks = strategy.choose(state, 1)
        if not picks:
            return
        for slot, commit in enumerate(picks):
            verdict = b.verdict(commit, state.threshold, slot=slot)
            state.verdicts[commit] = verdict
            tree = b.repo.tree_of(commit)
            state.values[commit] = [m.value for m in b.journal.for_tree(tree)]
            session.mark(commit, verdict)
            b.journal.write("verdict", commit=commit, verdict=verdict)
            b.progress.note(f"{commit[:12]} is {verdict}")
            if session.done:
                return


def _search(
    b: _Bisection, session: BisectSession, strategy: Strategy, good: str, bad: str
) -> Report:
    threshold, how, good_value, bad_value = _threshold(b, good, bad)
    b.progress.note(f"threshold {threshold:g} ({how})")
    b.journal.write("threshold", value=threshold, how=how)
    session.start(good, bad, first_parent=b.options.first_parent, paths=b.options.paths)
    state = SearchState(session, good, bad, threshold)
    _bisect(b, session, strategy, state)
    merge: str | None = None
    first_bad = session.first_bad
    if first_bad and b.options.first_parent and b.repo.info(first_bad).is_merge:
        merge = first_bad
        parent = b.repo.info(first_bad).parents[0]
        b.progress.note(f"{first_bad[:12]} is a merge: bisecting the merged branch")
        session.start(parent, first_bad, paths=b.options.paths)
        state = SearchState(session, parent, first_bad, threshold)
        _bisect(b, session, strategy, state)
        first_bad = session.first_bad
    candidates = [] if first_bad else session.remaining()
    bisect_log = session.log()
    confirmation: dict[str, str] = {}
    if first_bad:
        parent = b.repo.info(first_bad).parents[0]
        b.steps_left = 0
        for commit in (first_bad, parent):
            confirmation[commit] = b.verdict(commit, threshold, "confirm")
    return build_report(
        repo=b.repo,
        options=b.options,
        run_dir=b.run_dir,
        good=(good, good_value),
        bad=(bad, bad_value),
        threshold=(threshold, how),
        culprit=first_bad,
        merge=merge,
        candidates=candidates,
        confirmation=confirmation,
        measurements=list(b.used.values()),
        cached_ids=b.journal.cached_ids,
        verdicts=b.verdicts,
        reasons=b.reasons,
        bisect_log=bisect_log,
    )
