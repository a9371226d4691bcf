"""`run_bisection`: endpoints, threshold, the search, merge descent, confirmation.

Every measurement goes to the journal before its verdict goes to git, and every
verdict is recomputed from journaled measurements, so a run killed at any moment
and started again with the same command repeats no finished measurement.

Two searches: with `[search] error_rate = 0` and the verdict likelihood, plain git
bisect verdicts (decided by the repeats rule); otherwise probabilistic bisection
(bisector.search.noisy). Both run `slots` evaluations per round (`--parallel`).
Slots the endpoint round leaves idle measure the search's first points ahead
(`_speculative`); nothing uses those runs until the endpoints have checked out.
"""

from __future__ import annotations

import contextlib
import math
import signal
import statistics
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from bisector.backends.base import Backend, BackendContext
from bisector.backends.registry import create_backend
from bisector.dirs import ensure_dir
from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import BisectSession, GitRepo
from bisector.search.decide import DecisionRule, MajorityRule, calibrate_threshold
from bisector.search.evaluator import Evaluator
from bisector.search.journal import Journal
from bisector.search.likelihood import Likelihood, MetricLikelihood, VerdictLikelihood
from bisector.search.measure import Measurement, Scorer
from bisector.search.noisy import NoisyOutcome, NoisySearch, automatic_budget
from bisector.search.options import RunOptions
from bisector.search.plan import default_run_dir, open_range
from bisector.search.progress import PlainProgress, Progress
from bisector.search.report import Report, build_report
from bisector.search.strategy import SearchState, SplitStrategy, Strategy

SessionFactory = Callable[[Any, Path], BisectSession]


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


def run_bisection(
    options: RunOptions,
    *,
    backend: Backend | None = None,
    strategy: Strategy | None = None,
    rule: DecisionRule | None = None,
    progress: Progress | None = None,
    slots: int = 1,
    repo: GitRepo | None = None,
    session_factory: SessionFactory = BisectSession,
    scorer: Scorer | None = None,
    write_report: bool = True,
) -> Report:
    """The whole `bisector run`; raises BisectorError for anything the user must fix.

    `backend`, `strategy` and `rule` replace the configured/default ones (demo, benchmarks,
    tests); `slots` (or `[search] parallel`, whichever is larger) is how many commits
    are evaluated at once per round. `repo`, `session_factory`, `scorer` and
    `write_report` are seams for scripts/bench_bisect.py: an in-memory linear history
    instead of git for thousands of simulated trials.
    """
    if repo is None:
        repo, good, bad = open_range(options)
    else:
        good, bad = repo.resolve(options.good), repo.resolve(options.bad)
        repo.check_range(good, bad)
    # Absolute: backend commands run inside the candidate's worktree, not here.
    run_dir = (options.run_dir or default_run_dir(repo, options, good, bad)).resolve()
    progress = progress or PlainProgress(estimate_s=options.estimate_s)
    scorer = scorer or options.scorer()
    rule = rule or MajorityRule(options.repeats)
    strategy = strategy or SplitStrategy()
    good_worktree = run_dir / "worktrees" / "good"
    context = BackendContext(
        options.backend_section(),
        run_dir,
        options.warmup_s,
        options.seed,
        base_worktree=good_worktree,
    )
    backend = backend or create_backend(options.backend, context)  # config errors before any state
    with repo.lock(), sigterm_as_interrupt():
        ensure_dir(
            run_dir, what="run directory", fix="pass --run-dir a directory bisector can write"
        )
        cache = repo.common_dir / "bisector" / "measurements.jsonl"
        journal = Journal(run_dir, cache, options.fingerprint())
        if journal.last("start") is None:
            journal.write("start", good=good, bad=bad, command=options.resume_command)
        else:
            journal.write("resume", command=options.resume_command)
        session = session_factory(repo, run_dir / "worktrees" / "bisect")
        bisection = Evaluator(
            options=options,
            repo=repo,
            journal=journal,
            backend=backend,
            rule=rule,
            progress=progress,
            run_dir=run_dir,
            scorer=scorer,
        )
        bisection.slots = max(1, slots, options.parallel)
        try:
            try:
                repo.add_worktree(good_worktree, good)  # the gce backend's base cluster
                backend.setup()
            except InfraError as exc:
                raise BisectorError(
                    f"backend {options.backend} could not start: {exc.reason}"
                ) from None
            bisection.clean_up_after_crash()
            report = _search(bisection, session, strategy, good, bad)
        except KeyboardInterrupt:
            journal.write("interrupted")
            raise
        finally:
            try:
                with contextlib.suppress(InfraError):
                    backend.close()
            finally:  # whatever close() raised, the bisect session and worktrees go too
                session.close()
                for worktree in {*bisection.slot_worktrees, good_worktree}:
                    repo.remove_worktree(worktree)
                progress.stop()
        if write_report:
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


def endpoint_runs(options: RunOptions) -> int:
    if options.endpoint_runs:
        return options.endpoint_runs
    return 3 if options.likelihood == "metric" else options.repeats


@dataclass
class Endpoints:
    threshold: float
    how: str
    good_value: float
    bad_value: float
    good_runs: list[float] = field(default_factory=list)
    bad_runs: list[float] = field(default_factory=list)


MAX_ENDPOINT_RUNS = 12


def _enough_endpoint_runs(b: Evaluator, good: str, bad: str) -> tuple[list[Measurement], ...]:
    """Runs per endpoint; for the metric likelihood more while the sides overlap.

    The fitted means decide every later run's evidence, so their error must be
    small against the sides' separation D (in sigmas): the standard error of the
    difference, sqrt(2 / n), at most D / 4, i.e. n >= 32 / D^2 (capped at 12).
    Measured in bench_bisect: with 3 runs per side and D ~ 2, 1 in 13 trials
    named a wrong culprit as sure; the bias of the means, not the noise, did it.
    """
    n = endpoint_runs(b.options)
    spare = (lambda k: _speculative(b, good, bad, k)) if b.options.fold_rounds else None
    runs_good, runs_bad = b.measure_n([good, bad], "endpoint", n, spare)
    if b.options.likelihood != "metric" or b.options.endpoint_runs:
        return runs_good, runs_bad
    values = [[m.value for m in runs if m.value is not None] for runs in (runs_good, runs_bad)]
    if not all(values):
        return runs_good, runs_bad
    separation = MetricLikelihood.fit(values[0], values[1]).separation
    needed = min(MAX_ENDPOINT_RUNS, math.ceil(32 / max(separation, 1e-3) ** 2))
    if needed > n:
        b.progress.note(f"endpoints overlap ({separation:.1f} sigmas): {needed} runs each")
        runs_good, runs_bad = b.measure_n([good, bad], "endpoint", needed, spare)
    return runs_good, runs_bad


def _speculative(b: Evaluator, good: str, bad: str, k: int) -> list[str]:
    """The k commits the search would ask for first, measured beside the endpoints.

    Noise-aware: the prior's quantiles (every run is evidence for the posterior).
    Plain: the k-way split of the range, whose verdicts `_bisect` takes first, free,
    once the endpoints have checked out. Until then nothing reads them.
    """
    commits = _linear(b, good, bad, b.options.first_parent)
    inside = commits[:-1]
    if not inside:
        return []
    if b.options.noise_aware:
        prior = NoisySearch.prior(good, commits)
        picks = [prior.commits[x] for x in prior.picks(k)]
    else:
        picks = [inside[(j * len(inside)) // (k + 1)] for j in range(1, k + 1)]
    return [c for c in dict.fromkeys(picks) if c in inside]


def _threshold(b: Evaluator, good: str, bad: str) -> Endpoints:
    runs_good, runs_bad = _enough_endpoint_runs(b, good, bad)
    good_value = _endpoint_value(runs_good, "good", good)
    bad_value = _endpoint_value(runs_bad, "bad", bad)
    if b.options.threshold is not None:
        threshold, how = b.options.threshold, "given"
    else:
        threshold, how = calibrate_threshold(good_value, bad_value)
    found = Endpoints(
        threshold,
        how,
        good_value,
        bad_value,
        [m.value for m in runs_good if m.value is not None],
        [m.value for m in runs_bad if m.value is not None],
    )
    if b.options.error_rate > 0 and b.options.likelihood == "verdict":
        return found  # single runs may be wrong: the posterior weighs the endpoints' runs too
    if b.options.noise_aware:
        verdicts = (
            "good" if good_value < threshold else "bad",
            "bad" if bad_value >= threshold else "good",
        )
    else:
        verdicts = (b.verdict(good, threshold, "endpoint"), b.verdict(bad, threshold, "endpoint"))
    if verdicts != ("good", "bad"):
        raise BisectorError(
            f"endpoints do not separate at threshold {threshold:g}: good {good[:12]} scored "
            f"{good_value:g} ({verdicts[0]}), bad {bad[:12]} scored {bad_value:g} "
            f"({verdicts[1]}); pick another range, metric or threshold"
        )
    return found


def _bisect(
    b: Evaluator,
    session: BisectSession,
    strategy: Strategy,
    state: SearchState,
    ahead: list[str] | None = None,
) -> None:
    """`ahead`: commits already measured (speculatively); their verdicts go first."""
    while not session.done:
        remaining = session.remaining()
        b.steps_left = math.ceil(math.log2(len(remaining))) if len(remaining) > 1 else 0
        picks = [c for c in ahead or [] if c in remaining and _decided(b, c, state.threshold)]
        ahead = None
        picks = picks or strategy.choose(state, b.slots)
        if not picks:
            return
        verdicts = b.verdicts_of(picks, state.threshold, "bisect")
        for commit, verdict in _mark_order(picks, verdicts):
            state.verdicts[commit] = verdict
            tree = b.repo.tree_of(commit)
            state.values[commit] = [m.value for m in b.journal.for_tree(tree)]
            session.mark(commit, verdict)
            b.journal.write("verdict", commit=commit, verdict=verdict)
            b.progress.note(f"{commit[:12]} is {verdict}")
            if session.done:
                return


def _decided(b: Evaluator, commit: str, threshold: float) -> bool:
    """Whether the journaled runs of `commit` decide its verdict without another run."""
    found = b.journal.for_tree(b.repo.tree_of(commit))
    return bool(found) and b.rule.decide([m.value for m in found], threshold).verdict is not None


def _mark_order(picks: list[str], verdicts: list[str]) -> list[tuple[str, str]]:
    """Goods and skips first, then bads newest first: `git bisect bad X` moves the bad
    end to X even when X is newer, so the oldest bad must be marked last.
    `picks` are oldest first (SplitStrategy's order)."""
    pairs = list(zip(picks, verdicts, strict=True))
    return [p for p in pairs if p[1] != "bad"] + [p for p in reversed(pairs) if p[1] == "bad"]


@dataclass
class Found:
    culprit: str | None
    merge: str | None = None
    candidates: list[str] = field(default_factory=list)
    noisy: NoisyOutcome | None = None


def _likelihood(options: RunOptions, ends: Endpoints) -> Likelihood:
    if options.likelihood == "metric":
        return MetricLikelihood.fit(ends.good_runs, ends.bad_runs)
    return VerdictLikelihood(options.error_rate, ends.threshold)


def _linear(b: Evaluator, good: str, bad: str, first_parent: bool) -> list[str]:
    commits = b.repo.rev_list(good, bad, first_parent=first_parent, paths=b.options.paths)
    return commits if commits and commits[-1] == bad else [*commits, bad]


def _search_noisy(
    b: Evaluator, session: BisectSession, good: str, bad: str, ends: Endpoints
) -> Found:
    likelihood = _likelihood(b.options, ends)
    b.progress.note(likelihood.describe())
    b.journal.write("likelihood", describe=likelihood.describe())
    first_parent = b.options.first_parent
    commits = _linear(b, good, bad, first_parent)
    budget = b.options.max_evaluations or automatic_budget(len(commits))
    search = NoisySearch(b, session, likelihood, budget)

    def restart(lo: str = good, hi: str = bad, fp: bool = first_parent) -> None:
        session.start(lo, hi, first_parent=fp, paths=b.options.paths)

    outcome = search.run(good, bad, commits, restart)
    merge = None
    if outcome.sure and len(outcome.group) == 1 and first_parent:
        top = outcome.group[0]
        info = b.repo.info(top)
        if info.is_merge:
            merge = top
            parent = info.parents[0]
            b.progress.note(f"{top[:12]} is a merge: bisecting the merged branch")
            restart(parent, top, False)
            inner = search.run(
                parent,
                top,
                _linear(b, parent, top, False),
                lambda: restart(parent, top, False),
            )
            inner.confidence *= outcome.confidence
            inner.sure = (
                inner.sure and inner.confidence >= b.options.confidence * b.options.confidence
            )
            outcome = inner
    if outcome.sure and len(outcome.group) == 1:
        return Found(outcome.group[0], merge, [], outcome)
    return Found(None, merge, outcome.group if outcome.sure else [], outcome)


def _search_plain(
    b: Evaluator, session: BisectSession, strategy: Strategy, state: SearchState
) -> Found:
    threshold = state.threshold
    ahead = None
    if b.options.fold_rounds:
        fresh = 2 * endpoint_runs(b.options)  # what the endpoint rounds left idle
        ahead = _speculative(b, state.good, state.bad, (-fresh) % b.slots)
    _bisect(b, session, strategy, state, ahead)
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
    return Found(first_bad, merge, [] if first_bad else session.remaining())


def _search(
    b: Evaluator, session: BisectSession, strategy: Strategy, good: str, bad: str
) -> Report:
    ends = _threshold(b, good, bad)
    threshold, how = ends.threshold, ends.how
    b.progress.note(f"threshold {threshold:g} ({how})")
    b.journal.write("threshold", value=threshold, how=how)
    session.start(good, bad, first_parent=b.options.first_parent, paths=b.options.paths)
    if b.options.noise_aware:
        found = _search_noisy(b, session, good, bad, ends)
    else:
        state = SearchState(session, good, bad, threshold)
        found = _search_plain(b, session, strategy, state)
    first_bad = found.culprit
    bisect_log = session.log()
    confirmation: dict[str, str] = {}
    if first_bad:
        parent = b.repo.info(first_bad).parents[0]
        b.steps_left = 0
        pair = [first_bad, parent]
        if b.slots >= 2:
            confirmation = dict(zip(pair, b.verdicts_of(pair, threshold, "confirm"), strict=True))
        else:
            confirmation = {c: b.verdicts_of([c], threshold, "confirm")[0] for c in pair}
    return build_report(
        repo=b.repo,
        options=b.options,
        run_dir=b.run_dir,
        good=(good, ends.good_value),
        bad=(bad, ends.bad_value),
        threshold=(threshold, how),
        culprit=first_bad,
        merge=found.merge,
        candidates=found.candidates,
        confirmation=confirmation,
        measurements=list(b.used.values()),
        cached_ids=b.journal.cached_ids,
        verdicts=b.verdicts,
        reasons=b.reasons,
        bisect_log=bisect_log,
        search=_search_summary(b, found),
    )


def _search_summary(b: Evaluator, found: Found) -> dict[str, Any]:
    options = b.options
    summary: dict[str, Any] = {
        "mode": "posterior" if options.noise_aware else "git-bisect",
        "error_rate": options.error_rate,
        "likelihood": options.likelihood,
        "parallel": b.slots,
        "rounds": dict(b.rounds),
        "confidence": None,
        "sure": True,
        "likely_range": None,
    }
    noisy = found.noisy
    if noisy is not None:
        summary["confidence"] = round(noisy.confidence, 6)
        summary["sure"] = noisy.sure
        if not noisy.sure:
            summary["best_guess"] = noisy.group
            summary["likely_range"] = {
                "commits": noisy.likely,
                "probability": round(noisy.likely_mass, 6),
            }
    return summary
