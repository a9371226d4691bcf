"""Measuring commits: one evaluation per call, journaled before it counts.

The evaluator only measures: it checks a candidate out into its slot's worktree,
runs `evaluate_candidate`, journals the measurement and hands it back. It holds no
search state: the searches (plain, posterior) decide what to measure and what the
measurements mean. Parallel slots call `measure` for different commits at once;
the lock serializes what they share (journal, worktree bookkeeping, progress),
never the evaluations themselves. `batch` runs up to `slots` evaluations at once.

Its parts: deciding a commit (bisector.measure.decisions), the early-verdict policy
(bisector.measure.early), builds ahead (bisector.measure.prefetch), teardowns that
always finish (bisector.measure.teardown).
"""

from __future__ import annotations

import functools
import math
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from bisector.backends.base import Backend, Candidate, PartialLogs, capability
from bisector.cost import MeasuredPhases
from bisector.durations import format_duration
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.logs.scores import GrowingScorerFactory, Scorer
from bisector.measure.decisions import Deciding
from bisector.measure.early import (
    EarlyPolicy,
    EarlyStop,
    rescoring,
)
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings
from bisector.measure.executor import LOCAL, Executor
from bisector.measure.journal import (
    Begin,
    Cleaned,
    EarlyGoodWithdrawn,
    Journal,
)
from bisector.measure.measurement import REVERT_SKIP, Measurement
from bisector.measure.parallel import (
    CancellableBackend,
    Interrupted,
    run_concurrently,
)
from bisector.measure.prefetch import Prefetcher
from bisector.measure.provenance import WindowRule
from bisector.measure.reverts import Reverts, Substitute
from bisector.measure.teardown import Teardowns
from bisector.metrics.direction import Worse, is_bad
from bisector.numbers import NO_VALUE, format_threshold, format_value
from bisector.runfiles import gzip_logs
from bisector.search.base import Job
from bisector.search.progress import Phase, PhaseStarted, Progress, Reading
from bisector.signals import interrupt_pending

T = TypeVar("T")


class EvaluationLayout(Protocol):
    """Where a run keeps its checkouts and evaluations (bisector.bisection.layout.RunLayout:
    measurement does not import the bisection above it)."""

    @property
    def root(self) -> Path: ...

    @property
    def worktrees(self) -> Path: ...

    def slot_worktree(self, slot: int) -> Path: ...

    def eval_dir(self, number: int, commit: str) -> Path: ...


@dataclass(frozen=True)
class Prediction:
    """The ETA said when the search began (after the endpoints), to hold the run to."""

    eta_s: float  # the time still to come, then
    at_s: float  # wall time of the session when it was said

    @property
    def total_s(self) -> float:
        return self.at_s + self.eta_s


@dataclass(frozen=True)
class MeasureSettings:
    metric: str
    launch_attempts: int
    retry_wait_s: float = 0.0
    warmup_s: float = 0.0  # how long a warmup lasts: early verdicts pace their looks by it
    real_time_logs: bool = False  # the backend's logs carry wall-clock time
    check_every_s: float | None = None  # look at the log this often during the warmup
    prefetch_builds: int = 0  # builds of possible next candidates meanwhile (0: off)
    early_good: bool = False  # search runs may end early as good (see bisector.measure.early)
    worse: Worse = "higher"  # which way the metric gets worse: the side each line says


class Evaluator(Deciding):
    """Measures commits: journal first; nothing here decides what they mean."""

    def __init__(
        self,
        *,
        settings: MeasureSettings,
        repo: GitRepo,
        journal: Journal,
        backend: Backend,
        layout: EvaluationLayout,
        progress: Progress,
        scorer: Scorer,
        slots: int = 1,
        growing_scorer: GrowingScorerFactory | None = None,
        executor: Executor = LOCAL,
    ) -> None:
        self.settings = settings
        self.executor = executor
        self.repo = repo
        self.journal = journal
        self.backend = backend
        self.layout = layout
        self.progress = progress
        self.scorer = scorer
        self.slots = max(1, slots)
        # Culprits found so far, reverted in the candidates that contain them (none until
        # the pipeline hunts a further culprit): bisector.measure.reverts.
        self.reverts = Reverts(repo)
        # Commits whose confirmation runs take profiles of the apiserver (the culprit and
        # its parent: bisector.bisection.confirm), for the report's smoking gun.
        self.profiled: set[str] = set()
        self.used: dict[str, Measurement] = {}  # every measurement the report rests on
        # The side of the threshold each commit's last evaluation line said: the search's
        # verdict line repeats nothing that line said (one line per evaluation).
        self.said_side: dict[str, str] = {}
        self.worktrees: set[Path] = set()
        self.rounds: Counter[str] = Counter()  # phase -> rounds of concurrent evaluations
        self.reference_span_s: float | None = None  # what the endpoints' logs covered
        # Early good verdicts are withdrawn once a full-length run contradicted one.
        self.lock = threading.RLock()
        self.cancelled = threading.Event()
        self.teardowns = Teardowns(
            backend=backend, journal=journal, progress=progress, lock=self.lock, run_dir=layout.root
        )
        self._slot_runs: Counter[int] = Counter()
        self._steps_left: int | None = None
        self._steps_full_length = False
        self._started_since_expect = 0
        self.runs_after_search = 0  # descent, confirmation, safety net: set by the pipeline
        self._begun = len(journal.of_kind(Begin))
        # The ETA's phase times: this run's measurements (earlier sessions' too), the cost
        # model's guesses until then (set by the pipeline: bisector.bisection.pipeline).
        self.phase_times = MeasuredPhases()
        for earlier in journal.own:
            self.phase_times.add(earlier.phase_s, search=earlier.phase == "bisect")
        self.session_started = time.monotonic()
        self.prediction: Prediction | None = None
        self.growing_scorer = growing_scorer or rescoring(scorer)
        self.early = EarlyPolicy(
            metric=settings.metric,
            check_every_s=settings.check_every_s,
            early_good=settings.early_good,
            warmup_s=settings.warmup_s,
            watchable=capability(backend, PartialLogs) is not None,
            growing_scorer=self.growing_scorer,
            # Early good verdicts are withdrawn once a full-length run contradicted one.
            withdrawn=any(isinstance(r, EarlyGoodWithdrawn) for r in journal.records),
        )
        self.prefetch = Prefetcher(
            backend=backend,
            # A build made here serves only evaluations run here.
            builds=settings.prefetch_builds if executor.builds_ahead else 0,
            repo=repo,
            journal=journal,
            worktrees_dir=layout.worktrees,
            progress=progress,
            lock=self.lock,
            worktrees=self.worktrees,
            in_flight=self.teardowns.commits_in_flight,
        )

    # -- what the searches call ---------------------------------------------------

    def expect(self, steps_left: int | None, *, full_length: bool = False) -> None:
        """The search's estimate of the steps left (this one included), for the progress
        line; the runs planned after the search (`runs_after_search`) are added to it.
        `full_length`: these steps are no search runs but runs that never end early (the
        confirmations), expected at a full run's length in the ETA."""
        self._steps_left = steps_left
        self._steps_full_length = full_length
        self._started_since_expect = 0

    def _runs_left(self) -> int | None:
        """Runs left, the one starting now included: the search's, counted down until it
        says again, then what comes after it (the ETA counts confirmation runs too)."""
        if self._steps_left is None:
            return None
        search = max(self._steps_left - self._started_since_expect, 1)
        return search + self.runs_after_search

    def eta_s(self) -> float | None:
        """The time still to come, the run starting now included: the search's runs at a
        search run's measured length (early verdicts count), the runs after it at a full
        one's, `slots` side by side (bisector.cost.MeasuredPhases); None if unknown."""
        if self._steps_left is None:
            return None
        search = max(self._steps_left - self._started_since_expect, 1)
        if self._steps_full_length:
            # Confirmations run at full length: counted at the search runs' early
            # verdicts (10 s on the 2017 range), three of 1m27s would read "ETA 2m31s".
            search, after = 0, search + self.runs_after_search
        else:
            after = self.runs_after_search
        return self.phase_times.eta_s(math.ceil(search / self.slots), math.ceil(after / self.slots))

    def elapsed_s(self) -> float:
        """Wall time of this session of the run so far."""
        return time.monotonic() - self.session_started

    def upcoming(self, commits: Sequence[str]) -> None:
        """Commits the search may measure next, likeliest first: builds to prefetch (what
        would be built: the reverts in force applied)."""
        if not self.prefetch.enabled:
            return
        subs = [self.reverts.of(c) for c in commits]
        self.prefetch.set_upcoming([s.build for s in subs if not s.conflict])

    def tree_for(self, commit: str) -> str:
        """The tree a measurement of `commit` is of, under the reverts in force: the key of
        its journaled runs."""
        return self.reverts.of(commit).tree

    def early_stop(self, threshold: float | None, phase: str = "bisect") -> EarlyStop | None:
        """How a warmup in `phase` is watched and may end early (bisector.measure.early)."""
        return self.early.stop_for(threshold, phase)

    @property
    def early_good_withdrawn(self) -> bool:
        return self.early.withdrawn

    @property
    def onset_s(self) -> float | None:
        return self.early.onset_s

    def set_onset(self, bad_runs: Sequence[Measurement], threshold: float) -> str | None:
        """Arm early good verdicts from the bad endpoint's watched runs; what to say, if any."""
        return self.early.set_onset(bad_runs, threshold)

    def withdraw_early_good(self, why: str) -> None:
        """No more early good verdicts in this run, and none made so far decides anything
        (they stay in the journal and the report, as what happened)."""
        with self.lock:
            self.early.withdrawn = True
            self.journal.write(EarlyGoodWithdrawn(why))

    def window_rule(self) -> WindowRule:
        """What a log must cover and show (bisector.measure.provenance.WindowRule): a run that
        took time of its own is held to that; the endpoints' logs are the fallback."""
        span, real_time = self.reference_span_s or 0.0, self.settings.real_time_logs
        return WindowRule(span, real_time, earlier=self.journal.logs_seen)

    def measure(self, job: Job, slot: int = 0, early_threshold: float | None = None) -> Measurement:
        """One evaluation of `job.commit`; with `early_threshold`, it may end early."""
        worktree = self.layout.slot_worktree(slot)
        sub = self.reverts.of(job.commit)
        if sub.conflict:
            return self._unrevertable(job, sub, slot)
        tree = sub.tree
        with self.lock:
            if self.executor.checks_out:  # else the evaluation gets its tree elsewhere
                self.worktrees.add(worktree)
                try:
                    self.repo.add_worktree(worktree, sub.build)
                except InfraError as exc:  # e.g. objects missing in a mirror: this commit skips
                    return self._unchecked_out(job, tree, slot, exc.reason)
            self._begun += 1
            eval_dir = self.layout.eval_dir(self._begun, job.commit)
            # The backend builds what is checked out: with reverts, the tool's commit.
            profile = job.phase == "confirm" and job.commit in self.profiled
            candidate = Candidate(
                sub.build, worktree, eval_dir, slot, uuid.uuid4().hex, profile=profile
            )
            self.journal.write(Begin(job.commit, slot, str(eval_dir), job.why))
            self.teardowns.in_flight[slot] = candidate
            self._slot_runs[slot] += 1
            eta = self.eta_s()
            if job.phase == "bisect" and self.prediction is None and eta is not None:
                self.prediction = Prediction(round(eta, 3), round(self.elapsed_s(), 3))
            self.progress.status(f"{job.phase}: evaluating", job.commit, self._runs_left(), eta)
            self._started_since_expect += 1
        early = self.early_stop(early_threshold, job.phase)
        hooks = _SlotHooks(self, candidate, job.phase, job.commit)
        try:
            m = self._evaluate(candidate, job, tree, early, hooks)
            if sub.reverted:  # the search's commit, with what was built in its place
                m.commit, m.built, m.reverted = job.commit, sub.build, list(sub.reverted)
            m.logs = gzip_logs(m.logs)  # scored: kept gzipped at rest (bisector.runfiles)
            # Torn down: the slot's line ends, so a wait for a build ahead shows as that
            # build, not as a teardown far longer than expected.
            self.progress.evaluated(slot)
            self.prefetch.finish()
        except BaseException:
            self.progress.evaluated(slot)
            # An interrupt (Ctrl-C, SIGTERM) that reached here after the teardown: said
            # in the journal, so `cleanup` and the next run do not tear down again.
            if hooks.nothing_left_up.is_set():
                with self.lock:
                    self.teardowns.in_flight.pop(slot, None)
                    self.journal.write(Cleaned(str(eval_dir)))
            self.prefetch.stop()
            raise
        with self.lock:
            self.teardowns.in_flight.pop(slot, None)
            self.phase_times.add(m.phase_s, search=job.phase == "bisect")
            if m.teardown_error is not None:
                self.teardowns.failed(candidate, m.teardown_error)
            # A signal held during a teardown that then failed is owed now (bisector.signals).
            if self.cancelled.is_set() or interrupt_pending():
                # Torn down, but not a measurement: the resumed run measures it again.
                if m.teardown_error is None:
                    self.journal.write(Cleaned(str(eval_dir)))
                raise KeyboardInterrupt
            self.journal.add(m)
            self.progress.note(self._evaluation_line(job, m, early_threshold))
        return m

    def _unrevertable(self, job: Job, sub: Substitute, slot: int) -> Measurement:
        """A candidate whose reverts do not apply: a skip of its own (final: the tree's),
        nothing built or launched."""
        m = Measurement(
            job.commit, sub.tree, job.phase, reason=f"revert: {sub.conflict}",
            skipped_at=REVERT_SKIP, slot=slot,
        )  # fmt: skip
        m.started_at = time.time()
        m.why = job.why
        m.reverted = list(sub.reverted)
        with self.lock:
            self.journal.add(m)
            self.progress.note(f"measured {job.commit[:12]} [{job.phase}]: no value ({m.reason})")
        return m

    def _evaluation_line(self, job: Job, m: Measurement, threshold: float | None) -> str:
        """The evaluation's one line: commit, verdict (the side of the threshold, when
        there is one yet), value, time, then why (`4761cfa4aaf0 good: conflicts 27 <
        2,312, in 1m01s [bisect]; stopped early: ...`)."""
        metric = self.settings.metric
        if m.value is None:
            self.said_side[job.commit] = "skip"
            said = f"skip: {NO_VALUE}"
        else:
            said = f"{metric} {format_value(m.value, metric)}"
            if threshold is not None:
                side = "bad" if is_bad(m.value, threshold, self.settings.worse) else "good"
                self.said_side[job.commit] = side
                sign = {"bad": ">=", "good": "<"}[side]
                if self.settings.worse == "lower":
                    sign = {"bad": "<=", "good": ">"}[side]
                said = f"{side}: {said} {sign} {format_threshold(threshold, metric)}"
        why = f" ({m.reason})" if m.reason else ""
        if m.stopped_early:
            why += f"; stopped early: {m.stopped_early}"
        took = format_duration(m.duration_s)  # before the reason: it has durations too
        return f"{job.commit[:12]} {said}, in {took} [{job.phase}]{why}"

    def _unchecked_out(self, job: Job, tree: str, slot: int, why: str) -> Measurement:
        """A commit git could not check out: a skip with the reason, nothing launched."""
        m = Measurement(
            job.commit, tree, job.phase, reason=f"checkout: {why}", skipped_at="checkout", slot=slot
        )
        m.started_at = time.time()
        m.why = job.why
        self.journal.add(m)
        self.said_side[job.commit] = "skip"
        self.progress.note(f"{job.commit[:12]} skip: {NO_VALUE} [{job.phase}] ({m.reason})")
        return m

    def _evaluate(
        self,
        candidate: Candidate,
        job: Job,
        tree: str,
        early: EarlyStop | None,
        hooks: EvaluationHooks,
    ) -> Measurement:
        settings = EvaluationSettings(
            self.settings.metric,
            phase=job.phase,
            tree=tree,
            why=job.why,
            launch_attempts=self.settings.launch_attempts,
            retry_wait_s=self.settings.retry_wait_s,
            scorer=self.scorer,
            window=self.window_rule(),
            early=early,
        )
        backend = CancellableBackend(self.teardowns.finishing(), self.cancelled)
        return self.executor.evaluate(backend, candidate, settings, hooks)

    def batch(self, jobs: Sequence[Job], then: Sequence[str] = ()) -> list[Measurement]:
        """One fresh run per job, `slots` at a time (one round per `slots` jobs).

        `then`: commits likely measured after these (prefetched after the batch's own).
        """
        out: list[Measurement] = []
        for start in range(0, len(jobs), self.slots):
            chunk = jobs[start : start + self.slots]
            self.upcoming([j.commit for j in jobs[start + self.slots :]] + list(then))

            def task(slot: int, job: Job) -> Measurement:
                m = self.measure(job, slot)
                self.used[m.id] = m
                return m

            tasks = [functools.partial(task, slot, job) for slot, job in enumerate(chunk)]
            out += self.concurrently(tasks, chunk[0].phase)
        return out

    def measure_n(
        self,
        commits: list[str],
        phase: str,
        n: int,
        spare: Callable[[int], list[Job]] | None = None,
    ) -> list[list[Measurement]]:
        """At least `n` runs of each commit (fewer measured when the journal has some).

        `spare(k)` names up to k jobs for the slots the last round would leave idle
        (speculative search runs beside the endpoints): journaled like any run, they
        reach the search only through the journal.
        """
        found = [self.runs(c, phase) for c in commits]
        # Interleaved (good, bad, good, bad, ...) so parallel slots pair them up.
        missing = [
            Job(c, phase, f"{phase} run {r + 1} of {n}")
            for r in range(n)
            for c, runs in zip(commits, found, strict=True)
            if r >= len(runs)
        ]
        idle = (-len(missing)) % self.slots if missing else 0
        ahead = spare(idle)[:idle] if spare and idle else []
        # The search's first picks come next: their builds can run during these warmups.
        then = [j.commit for j in spare(self.slots)] if spare and self.prefetch.enabled else []
        for m in self.batch(missing + ahead, then):
            if m.commit in commits and m.phase == phase:
                found[commits.index(m.commit)].append(m)
        return found

    def set_reference(self, *sides: Sequence[Measurement]) -> None:
        """The endpoints' logs set what a later log must cover when its run's own length
        says nothing (see WindowRule): the shorter of the sides' median spans, so a log of
        either side's kind passes (a run whose length depends on the tree is shorter on
        one side)."""
        medians = []
        for runs in sides:
            spans = [m.span_s for m in runs if m.value is not None and m.span_s is not None]
            if spans:
                medians.append(float(statistics.median(spans)))
        if medians:
            self.reference_span_s = min(medians)

    def check_cancelled(self) -> None:
        """Raise Interrupted once the run was cancelled (between a watched warmup's steps)."""
        if self.cancelled.is_set():
            raise Interrupted("the run was interrupted")

    # -- rounds and crashes ------------------------------------------------------------

    def concurrently(self, tasks: Sequence[Callable[[], T]], phase: str) -> list[T]:
        """One round: task i runs in slot i, all at once."""
        self._slot_runs.clear()
        try:
            return run_concurrently(
                tasks, self.cancelled, self.teardowns.abandon, self.teardowns.is_tearing_down
            )
        finally:
            # A slot deciding by repeats measures several times in a row: that many rounds.
            self.rounds[phase] += max(self._slot_runs.values(), default=0)

    def clean_up_after_crash(self) -> None:
        """Tear down what a killed run left up (a cluster costs money), before anything else."""
        for begun in self.journal.unfinished():
            worktree = self.layout.slot_worktree(begun.slot)
            candidate = Candidate(begun.commit, worktree, Path(begun.eval_dir), begun.slot)
            taken = self.executor.left_by_a_crash(candidate)
            if taken is not None:
                # Still running where the executor runs it: the evaluation that asks for
                # this commit again takes it over; this begun one is closed, and what it
                # started stays in the executor's care (its close and `bisector cleanup`).
                self.progress.note(f"{begun.commit[:12]}, begun by a killed run: {taken}")
                self.journal.write(Cleaned(str(begun.eval_dir)))
                continue
            self.worktrees.add(worktree)
            self.progress.note(
                f"tearing down {begun.commit[:12]}, left up by a killed run or a failed teardown"
            )
            self.repo.add_worktree(worktree, begun.commit)
            self.teardowns.now(candidate)


class _SlotHooks(EvaluationHooks):
    """The evaluator's part in one evaluation of a slot: builds ahead, a cancelled run,
    the progress line, and whether anything of it can still be up."""

    def __init__(self, evaluator: Evaluator, candidate: Candidate, phase: str, commit: str) -> None:
        self.evaluator = evaluator
        self.candidate = candidate
        self.phase = phase
        self.commit = commit  # the search's commit (the candidate's may have reverts in it)
        self.nothing_left_up = threading.Event()

    def before_build(self, m: Measurement) -> None:
        self.evaluator.prefetch.use(m)

    def after_build(self) -> None:
        self.evaluator.prefetch.start()

    def between_looks(self) -> None:
        self.evaluator.check_cancelled()

    def phase_begins(self, phase: Phase) -> None:
        evaluator = self.evaluator
        expected = evaluator.phase_times.expected(phase, search=self.phase == "bisect")
        evaluator.progress.phase(PhaseStarted(self.candidate.slot, self.commit, phase, expected))

    def reading(self, reading: Reading) -> None:
        self.evaluator.progress.reading(self.candidate.slot, reading)

    def nothing_up(self) -> None:
        self.nothing_left_up.set()
