"""`run_bisection`: endpoints, threshold, the git bisect loop, merge descent, confirmation.

Every measurement goes to the journal before its verdict goes to git, and every
verdict is recomputed from journaled measurements, so a run killed at any moment
and started again with the same command repeats no finished measurement.
"""

from __future__ import annotations

import contextlib
import math
import signal
import statistics
import threading
from collections.abc import Iterator
from types import FrameType

from bisector.backends.base import Backend, BackendContext
from bisector.backends.registry import create_backend
from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import BisectSession
from bisector.search.decide import DecisionRule, MajorityRule, calibrate_threshold
from bisector.search.evaluator import Evaluator
from bisector.search.journal import Journal
from bisector.search.measure import Measurement
from bisector.search.options import RunOptions
from bisector.search.plan import default_run_dir, open_range
from bisector.search.progress import PlainProgress, Progress
from bisector.search.report import Report, build_report
from bisector.search.strategy import GitBisectStrategy, SearchState, Strategy


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
) -> Report:
    """The whole `bisector run`; raises BisectorError for anything the user must fix.

    `backend`, `strategy` and `rule` replace the configured/default ones (demo, benchmarks,
    tests); `slots` is how many commits the strategy may ask for per round. Slots are
    evaluated one after another here; running them concurrently is issue 5's job.
    """
    repo, good, bad = open_range(options)
    # Absolute: backend commands run inside the candidate's worktree, not here.
    run_dir = (options.run_dir or default_run_dir(repo, options, good, bad)).resolve()
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
        bisection = Evaluator(
            options=options,
            repo=repo,
            journal=journal,
            backend=backend,
            rule=rule,
            progress=progress,
            run_dir=run_dir,
        )
        bisection.slots = max(1, slots)
        try:
            try:
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


def _threshold(b: Evaluator, good: str, bad: str) -> tuple[float, str, float, float]:
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


def _bisect(b: Evaluator, session: BisectSession, strategy: Strategy, state: SearchState) -> None:
    while not session.done:
        remaining = len(session.remaining())
        b.steps_left = math.ceil(math.log2(remaining)) if remaining > 1 else 0
        picks = strategy.choose(state, b.slots)
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
    b: Evaluator, session: BisectSession, strategy: Strategy, good: str, bad: str
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
