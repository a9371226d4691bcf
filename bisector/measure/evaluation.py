"""One evaluation of one candidate: build, launch (with retries), warmup, collect, score, teardown.

Self-contained so `run`, `demo` and `nightly` share it. Infrastructure failures (a
step's InfraError, and an OSError or a failed command a backend let out of a step:
`_step`), logs without data for the metric, and logs that are not this launch's or do
not cover the measurement window (bisector.measure.provenance) come back as a
measurement (bisector.measure.measurement) with no value and a `reason`: the caller
records them as *skip*, never as a verdict. Any other exception (a bug) propagates
after the teardown of what was launched: no measurement either.

Early verdicts (bisector.measure.early) end a watched warmup before its time; the
collected log is then held to what the early end claimed (`_score`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from bisector import proc
from bisector.backends.base import Backend, Candidate, PartialLogs, capability
from bisector.collected import read_load
from bisector.errors import BisectorError, BuildError, CollectError, InfraError, LaunchError
from bisector.logs import metric_value, score_logs
from bisector.logs.scores import Scorer
from bisector.measure.early import (
    EarlyEnd,
    EarlyStop,
    early_good_problem,
    warm_up_watching,
)
from bisector.measure.measurement import Measurement, log_window
from bisector.measure.provenance import WindowRule, log_head, log_problem
from bisector.metrics.scoring import ReadsLogDir
from bisector.numbers import format_value
from bisector.search.progress import Phase, Reading
from bisector.settings import RunTable


@dataclass(frozen=True)
class EvaluationSettings:
    """How one evaluation runs, and what its measurement says it was."""

    metric: str
    phase: str = "bisect"  # "endpoint", "bisect" or "confirm" (Measurement.phase)
    tree: str = ""
    why: str = ""  # why the search measured this commit
    launch_attempts: int = RunTable.launch_attempts  # `[run] launch_attempts`, declared once
    retry_wait_s: float = 0.0  # between launch attempts
    scorer: Scorer = score_logs
    window: WindowRule = field(default_factory=WindowRule)
    # Watch the warmup to end it early on a certain verdict (a backend with PartialLogs).
    early: EarlyStop | None = None


class EvaluationHooks:
    """Where a caller takes part in an evaluation; here each point does nothing.

    A caller overrides the points it needs (the evaluator: builds ahead, a cancelled
    run, the progress line). The steps themselves are the backend's: a caller that
    changes one (a teardown that finishes whatever signal arrives) wraps the backend
    (bisector.backends.base.ForwardingBackend).
    """

    def before_build(self, m: Measurement) -> None:
        """Before the build: wait for a build of this commit made ahead, and say in `m`
        whether one is used (`prefetched_build`)."""

    def after_build(self) -> None:
        """The build is done: the next candidates' builds can run while the cluster starts."""

    def between_looks(self) -> None:
        """Between the steps of a watched warmup: a cancelled run raises here."""

    def phase_begins(self, phase: Phase) -> None:
        """Each phase as it begins (build, launch, ready, warmup, collect, teardown); their
        times go to `Measurement.phase_s`."""

    def reading(self, reading: Reading) -> None:
        """Each look at a watched warmup's log that read a value."""

    def nothing_up(self) -> None:
        """Nothing of this evaluation can be left up: its last teardown succeeded, or
        nothing was launched. Said on every path: an interrupt propagating from the
        evaluation has torn down too."""


NO_HOOKS = EvaluationHooks()


def evaluate_candidate(
    backend: Backend,
    candidate: Candidate,
    settings: EvaluationSettings,
    hooks: EvaluationHooks = NO_HOOKS,
) -> Measurement:
    """Evaluate `candidate` once; teardown runs on every path once launch was attempted.

    With `settings.early`, a backend that can show its log so far (PartialLogs) is
    watched during the warmup, which ends early on a certain verdict.
    """
    m = Measurement(
        candidate.commit,
        settings.tree,
        settings.phase,
        started_at=time.time(),
        slot=candidate.slot,
        why=settings.why,
    )
    m.eval_dir = str(candidate.eval_dir)
    start = time.monotonic()
    launched = collecting = False
    clock = _PhaseClock(m, hooks)
    early = settings.early
    partial = capability(backend, PartialLogs) if early is not None else None

    def teardown_between(_state: object) -> None:
        with _step(candidate, "teardown"):
            backend.teardown(candidate)

    try:
        candidate.eval_dir.mkdir(parents=True, exist_ok=True)
        clock.begin("build")  # waiting for this commit's build ahead included
        hooks.before_build(m)
        with _step(candidate, "build"):
            backend.build(candidate)
        launched = True
        hooks.after_build()
        clock.begin("launch")  # every attempt, and the teardowns between them
        for attempt in Retrying(
            stop=stop_after_attempt(max(1, settings.launch_attempts)),
            wait=wait_fixed(settings.retry_wait_s),
            retry=retry_if_exception_type(LaunchError),
            before_sleep=teardown_between,
            reraise=True,
        ):
            with attempt, _step(candidate, "launch"):
                m.launch_attempts += 1
                m.launched_at = time.time()  # the log must be this attempt's
                backend.launch(candidate)
        clock.begin("ready")
        clock.begin("warmup")
        ready = time.monotonic()
        ended: EarlyEnd | None = None
        with _step(candidate, "warmup"):
            if early is not None and partial is not None:
                ended = warm_up_watching(
                    partial,
                    candidate,
                    early,
                    hooks.between_looks,
                    m.trajectory,
                    on_reading=hooks.reading,
                )
                m.stopped_early = None if ended is None else ended.reason
            else:
                backend.warmup(candidate)
        m.ran_s = round(time.monotonic() - ready, 3)
        collecting = True
        clock.begin("collect")  # the scoring too
        with _step(candidate, "collect"):
            logs = [str(p) for p in backend.collect(candidate)]
        m.logs = logs
        scorer = settings.scorer
        if isinstance(scorer, ReadsLogDir):  # its metric is read from this evaluation's files
            scorer = scorer.in_log_dir(candidate.log_dir)
        rule = settings.window
        if backend.traits.own_logs:  # the sim: each log is this launch's
            rule = dataclasses.replace(rule, own_logs=True)
        _score(
            scorer,
            logs,
            settings.metric,
            m,
            rule,
            early=early,
            ended=ended,
            launch_id=candidate.launch_id,
        )
    except InfraError as exc:
        m.reason, m.skipped_at = f"{exc.kind}: {exc.reason}", exc.kind
    finally:
        delivered = read_load(candidate.log_dir) if collecting else None
        if delivered is not None:  # also on a skip: "the load did not run" shows its share
            m.load_fraction, m.load = delivered.fraction, delivered.describe()
        if m.value is None:
            m.stopped_early = None  # a skip: the early look decided nothing
            m.early_verdict = None
        torn_down = not launched
        clock.begin("teardown" if launched else None)
        if launched:
            try:
                with _step(candidate, "teardown"):
                    backend.teardown(candidate)
                torn_down = True
            except InfraError as exc:
                m.teardown_error = exc.reason
                _teardown_failed(m, exc.reason)
        clock.begin(None)
        m.duration_s = round(time.monotonic() - start, 3)
        if torn_down:
            hooks.nothing_up()
    return m


# What a step's OSError or failed command (proc.CommandError) is, when its backend let it
# out: that step's skip, as the backend's own InfraError would have been (a launch's is
# retried, a teardown's is a failed teardown), and said with the step when its kind is
# another's. One door for every backend, as mozregression's Launcher.start is for its
# launchers: no backend needs a clause of its own to keep them from ending the run.
_STEP_FAILURES: dict[str, tuple[type[InfraError], str]] = {
    "build": (BuildError, ""),
    "launch": (LaunchError, ""),
    "warmup": (CollectError, "warmup: "),  # the warmup that failed grew no log to collect
    "collect": (CollectError, ""),
    "teardown": (InfraError, ""),  # Measurement.teardown_error
}


@contextlib.contextmanager
def _step(candidate: Candidate, step: str) -> Iterator[None]:
    """One backend step: whatever it runs keeps its output (evals/NNN/<step>.log), and an
    OSError or a failed command out of it is the step's InfraError (_STEP_FAILURES)."""
    try:
        with proc.logging_to(candidate.eval_dir / f"{step}.log"):
            yield
    except (OSError, proc.CommandError) as exc:
        error, said = _STEP_FAILURES[step]
        text = str(exc) if isinstance(exc, proc.CommandError) else f"{type(exc).__name__}: {exc}"
        raise error(f"{said}{text}") from exc


class _PhaseClock:
    """Says each phase as it begins and adds up the time spent in it (Measurement.phase_s)."""

    def __init__(self, m: Measurement, hooks: EvaluationHooks) -> None:
        self.m = m
        self.hooks = hooks
        self.current: Phase | None = None
        self.since = 0.0

    def begin(self, phase: Phase | None) -> None:
        now = time.monotonic()
        if self.current is not None and self.current != "ready":  # ready is a moment
            spent = self.m.phase_s.get(self.current, 0.0) + now - self.since
            self.m.phase_s[self.current] = round(spent, 3)
        self.current, self.since = phase, now
        if phase is not None:
            self.hooks.phase_begins(phase)


def _score(
    scorer: Scorer,
    logs: list[str],
    metric: str,
    m: Measurement,
    rule: WindowRule,
    *,
    early: EarlyStop | None = None,
    ended: EarlyEnd | None = None,
    launch_id: str = "",
) -> None:
    try:
        scores = scorer(logs)
    except InfraError as exc:  # a metric source's files (bisector.metrics) are missing or garbled
        m.reason, m.skipped_at = f"{exc.kind}: {exc.reason}", exc.kind
        return
    except BisectorError as exc:  # an unreadable or corrupt log is the infrastructure's fault
        m.reason, m.skipped_at = f"collect: log cannot be scored: {exc}", CollectError.kind
        return
    except Exception as exc:  # e.g. an I/O error mid-read: a skip, not the end of the run
        m.reason = f"collect: log cannot be scored: {type(exc).__name__}: {exc}"
        m.skipped_at = CollectError.kind
        return
    m.metrics = dict(scores.metrics)
    m.window = log_window(scores)
    m.head = log_head(logs)
    value = metric_value(scores, metric)
    if value is None:
        m.reason = f"no data: the log has no lines metric {metric!r} needs"
        return
    threshold = early.threshold if early is not None else None
    if ended is not None and threshold is not None and value >= threshold:
        # Past the threshold (a monotone metric stays there): bad for certain, and the
        # log covers less than the warmup on purpose.
        rule = rule.coverage_waived()
        m.early_verdict = "bad"
        if ended.verdict == "good":
            shown = format_value(value, metric)
            m.stopped_early = f"{ended.reason}; the collected log has {shown}: bad"
    elif ended is not None and ended.verdict == "good" and early is not None:
        why_not = early_good_problem(early, ended, value, m.span_s, rule.expected_s)
        if why_not is not None:
            m.reason = why_not
            return
        # The log must cover what was watched, not the whole warmup (checked above).
        rule = rule.coverage_waived()
        m.early_verdict = "good"
    why_not = log_problem(scores, m, rule, metric, launch_id)
    if why_not is None and ended is not None and ended.verdict == "bad" and m.early_verdict is None:
        # The look passed the threshold, this run's later log did not: the look read
        # another file. The log is short on purpose and says nothing either way.
        why_not = (
            f"stopped early as bad ({ended.reason}), but the collected log has "
            f"{format_value(value, metric)}: "
            "the look read another file than this run's log"
        )
    if why_not is not None:
        m.reason = why_not  # the value stays in `metrics`, never in `value`
        return
    m.value = value


def _teardown_failed(m: Measurement, error: str) -> None:
    """A teardown that failed makes the evaluation a skip: the cluster it measured may
    still be up or half gone, so its log says nothing certain about the code; the value
    stays in `metrics` for a person to read, never in `value`."""
    if m.value is not None:
        m.metrics.setdefault("value_before_teardown_failed", m.value)
    m.value = None
    m.stopped_early = None
    m.early_verdict = None
    if not m.reason:
        m.reason, m.skipped_at = f"teardown: {error}", "teardown"
