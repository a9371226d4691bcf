"""Measuring commits: one evaluation per call, journaled before it counts.

The evaluator only measures: it checks a candidate out into its slot's worktree,
runs `evaluate_candidate`, journals the measurement and hands it back. It holds no
search state: the searches (plain, posterior) decide what to measure and what the
measurements mean. Parallel slots call `measure` for different commits at once;
the lock serializes what they share (journal, worktree bookkeeping, progress),
never the evaluations themselves. `batch` runs up to `slots` evaluations at once.

Two ways to reach the culprit sooner (bisector.measure.evaluation has the rules):
early verdicts, armed once a threshold is known (`decide` outside the endpoints,
`[run] check_every`, a backend that can `peek`): a warmup whose log already passes
the threshold ends there; prefetched builds (`[run] prefetch_builds`, a backend
that can `prefetch_build`): while a cluster starts and warms up, the commits the search named
as possible next ones (`upcoming`) are built in their own worktrees, at most
`prefetch_builds` at once, all finished before the measurement returns.

Teardown always finishes: it runs with signals held (see bisector.signals), a
`cleaned` record is journaled only after it succeeded, and a failed one is said
loudly, journaled (`teardown_failed`) and kept for the next run and `bisector cleanup`.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bisector import proc
from bisector.backends.base import Backend, Candidate, PartialLogs, PrefetchBuilds, capability
from bisector.bisection.layout import RunLayout
from bisector.durations import format_duration
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.measure.early import (
    EARLY_GOOD_FACTOR,
    EarlyStop,
    GrowingScorerFactory,
    Scorer,
    is_monotone,
    looks_agree,
    onset,
    rescoring,
)
from bisector.measure.evaluation import Measurement, WindowRule, evaluate_candidate
from bisector.measure.journal import (
    Begin,
    Cleaned,
    EarlyGoodWithdrawn,
    Journal,
    Mark,
    Prefetch,
    TeardownFailed,
    read_journal,
)
from bisector.measure.parallel import (
    CancellableBackend,
    Interrupted,
    kill_running_commands,
    run_concurrently,
)
from bisector.numbers import NO_VALUE, format_value
from bisector.runfiles import gzip_logs
from bisector.search.base import Job
from bisector.search.decide import Decision, DecisionRule, SameTree
from bisector.search.progress import Progress
from bisector.signals import held_during, interrupt_pending

T = TypeVar("T")
PREFETCH_STOP_WAIT_S = 2.0  # how long an interrupt waits for builds ahead to wind down


@dataclass(frozen=True)
class MeasureSettings:
    metric: str
    launch_attempts: int = 3
    retry_wait_s: float = 0.0
    warmup_s: float = 0.0  # a log should cover (most of) this
    real_time_logs: bool = False  # the backend's logs carry wall-clock time
    check_every_s: float | None = None  # look at the log this often during the warmup
    prefetch_builds: int = 0  # builds of possible next candidates meanwhile (0: off)
    early_good: bool = False  # search runs may end early as good (see bisector.measure.evaluation)


def _same_tree_said(
    commit: str, found: list[Measurement], decision: Decision, metric: str
) -> Decision:
    """A verdict from runs of other commits with the same tree (a same-tree merge: a merge
    and its branch's last commit) says so: there is no measurement line of `commit` itself
    to point to."""
    if not found or any(m.commit == commit for m in found):
        return decision
    same = SameTree(
        tuple(m.commit for m in found), tuple(format_value(m.value, metric) for m in found)
    )
    return Decision(decision.verdict, same.text(), same_tree=same)


class Evaluator:
    """Measures commits: journal first; nothing here decides what they mean."""

    def __init__(
        self,
        *,
        settings: MeasureSettings,
        repo: GitRepo,
        journal: Journal,
        backend: Backend,
        layout: RunLayout,
        progress: Progress,
        scorer: Scorer,
        slots: int = 1,
        growing_scorer: GrowingScorerFactory | None = None,
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.journal = journal
        self.backend = backend
        self.layout = layout
        self.progress = progress
        self.scorer = scorer
        self.slots = max(1, slots)
        self.used: dict[str, Measurement] = {}  # every measurement the report rests on
        self.worktrees: set[Path] = set()
        self.rounds: Counter[str] = Counter()  # phase -> rounds of concurrent evaluations
        self.reference_span_s: float | None = None  # what the endpoints' logs covered
        self.onset_s: float | None = None  # when the bad endpoint passed the threshold
        # Early good verdicts are withdrawn once a full-length run contradicted one.
        self.early_good_withdrawn = any(isinstance(r, EarlyGoodWithdrawn) for r in journal.records)
        self.lock = threading.RLock()
        self.cancelled = threading.Event()
        self._in_flight: dict[int, Candidate] = {}  # slot -> candidate being evaluated
        self._tearing_down: set[int] = set()
        self._slot_runs: Counter[int] = Counter()
        self._steps_left: int | None = None
        self._started_since_expect = 0
        self.runs_after_search = 0  # descent, confirmation, safety net: set by the pipeline
        self._begun = len(journal.of_kind(Begin))
        self.growing_scorer = growing_scorer or rescoring(scorer)
        self._upcoming: list[str] = []
        # commit -> set once its build ahead (a daemon thread: an interrupted run does not
        # wait for a build nobody needs; its commands are killed, see `measure`) has ended.
        # An Event, not Thread.is_alive(): on CPython 3.11 an interrupt inside Thread.join()
        # marks a running thread stopped (python/cpython#90882), and a build believed ended
        # would not be killed.
        self._prefetches: dict[str, threading.Event] = {}
        self._free_prefetch_trees: list[Path] = []
        self._prefetch_trees_made = False
        self._prefetch_stopping = threading.Event()  # an interrupt: start no build ahead

    # -- what the searches call ---------------------------------------------------

    def expect(self, steps_left: int | None) -> None:
        """The search's estimate of the steps left (this one included), for the progress
        line; the runs planned after the search (`runs_after_search`) are added to it."""
        self._steps_left = steps_left
        self._started_since_expect = 0

    def _runs_left(self) -> int | None:
        """Runs left, the one starting now included: the search's, counted down until it
        says again, then what comes after it (the ETA counts confirmation runs too)."""
        if self._steps_left is None:
            return None
        search = max(self._steps_left - self._started_since_expect, 1)
        return search + self.runs_after_search

    def upcoming(self, commits: Sequence[str]) -> None:
        """Commits the search may measure next, likeliest first: builds to prefetch."""
        with self.lock:
            self._upcoming = list(dict.fromkeys(commits))

    def early_stop(self, threshold: float | None, phase: str = "bisect") -> EarlyStop | None:
        """How a warmup in `phase` is watched and may end early against `threshold`.

        Search runs may end early (bad; good too with `early_good` once the bad
        endpoint's onset is known); endpoints are watched to learn that onset but run
        full length; the confirmation runs full length (it is the evidence, and the
        parent's run is what would catch a wrong early good verdict). None: not watched.
        """
        every = self.settings.check_every_s
        if not every or not is_monotone(self.settings.metric):
            return None
        if capability(self.backend, PartialLogs) is None:
            return None
        # A backend's own warmup (the sim's simulated duration) may differ from [run]'s.
        warmup = self.backend.traits.warmup_s or self.settings.warmup_s
        if phase == "endpoint" and self.settings.early_good:
            return EarlyStop(self.settings.metric, None, every, warmup, self.growing_scorer)
        if phase != "bisect" or threshold is None:
            return None
        good_after = None
        if self.early_good_on():
            assert self.onset_s is not None
            good_after = EARLY_GOOD_FACTOR * self.onset_s
        return EarlyStop(
            self.settings.metric,
            threshold,
            every,
            warmup,
            self.growing_scorer,
            good_after_s=good_after,
            onset_s=self.onset_s,
        )

    def early_good_on(self) -> bool:
        return (
            self.settings.early_good and self.onset_s is not None and not self.early_good_withdrawn
        )

    def set_onset(self, bad_runs: Sequence[Measurement], threshold: float) -> str | None:
        """Arm early good verdicts from the bad endpoint's watched runs; what to say, if any.

        The onset is the latest of the bad runs' first looks at or above the threshold
        (an upper bound: the crossing was at most one look earlier). Any bad run without
        one (not watched, or only cached from an earlier run) leaves them off.
        """
        if not self.settings.early_good:
            return None
        measured = [m for m in bad_runs if m.value is not None]
        if any(not looks_agree(m.trajectory, m.value) for m in measured if m.value is not None):
            self.onset_s = None
            return (
                "early good verdicts off: a look at the bad endpoint's log read more than "
                "its collected log (the peek read another file?)"
            )
        onsets = [onset(m.trajectory, threshold) for m in measured]
        if not onsets or any(o is None for o in onsets):
            self.onset_s = None
            return (
                "early good verdicts off: the bad endpoint's warmup was not watched "
                "(a backend without partial logs, or runs measured before)"
            )
        self.onset_s = max(o for o in onsets if o is not None)
        if self.early_good_withdrawn:
            return "early good verdicts off: a full-length run contradicted one in this run"
        return (
            f"early good verdicts on: the bad endpoint passed the threshold after "
            f"{format_duration(self.onset_s)}; a search run below it for "
            f"{format_duration(EARLY_GOOD_FACTOR * self.onset_s)} and on course to stay "
            f"under half of it is good"
        )

    def withdraw_early_good(self, why: str) -> None:
        """No more early good verdicts in this run, and none made so far decides anything
        (they stay in the journal and the report, as what happened)."""
        with self.lock:
            self.early_good_withdrawn = True
            self.journal.write(EarlyGoodWithdrawn(why))

    def window_rule(self) -> WindowRule:
        """What a log must cover and show (bisector.measure.evaluation.WindowRule): a run that
        took time of its own is held to that; the endpoints' logs are the fallback."""
        return WindowRule(self.reference_span_s or 0.0, self.settings.real_time_logs)

    def measure(self, job: Job, slot: int = 0, early_threshold: float | None = None) -> Measurement:
        """One evaluation of `job.commit`; with `early_threshold`, it may end early."""
        worktree = self.layout.slot_worktree(slot)
        tree = self.repo.tree_of(job.commit)
        with self.lock:
            self.worktrees.add(worktree)
            try:
                self.repo.add_worktree(worktree, job.commit)
            except InfraError as exc:  # e.g. objects missing in a mirror: this commit skips
                return self._unchecked_out(job, tree, slot, exc.reason)
            self._begun += 1
            eval_dir = self.layout.eval_dir(self._begun, job.commit)
            candidate = Candidate(job.commit, worktree, eval_dir, slot, uuid.uuid4().hex)
            self.journal.write(Begin(job.commit, slot, str(eval_dir), job.why))
            self._in_flight[slot] = candidate
            self._slot_runs[slot] += 1
            self.progress.status(f"{job.phase}: evaluating", job.commit, self._runs_left())
            self._started_since_expect += 1
        early = self.early_stop(early_threshold, job.phase)
        nothing_up = threading.Event()
        try:
            m = self._evaluate(candidate, job, tree, early, nothing_up.set)
            m.logs = gzip_logs(m.logs)  # scored: kept gzipped at rest (bisector.runfiles)
            self._finish_prefetches()
        except BaseException:
            # An interrupt (Ctrl-C, SIGTERM) that reached here after the teardown: said
            # in the journal, so `cleanup` and the next run do not tear down again.
            if nothing_up.is_set():
                with self.lock:
                    self._in_flight.pop(slot, None)
                    self.journal.write(Cleaned(str(eval_dir)))
            self._stop_prefetches()
            raise
        with self.lock:
            self._in_flight.pop(slot, None)
            if m.teardown_error is not None:
                self._teardown_failed(candidate, m.teardown_error)
            # A signal held during a teardown that then failed is owed now (bisector.signals).
            if self.cancelled.is_set() or interrupt_pending():
                # Torn down, but not a measurement: the resumed run measures it again.
                if m.teardown_error is None:
                    self.journal.write(Cleaned(str(eval_dir)))
                raise KeyboardInterrupt
            self.journal.add(m)
            metric = self.settings.metric
            shown = NO_VALUE if m.value is None else f"{metric}={format_value(m.value, metric)}"
            why = f" ({m.reason})" if m.reason else ""
            if m.stopped_early:
                why += f"; stopped early: {m.stopped_early}"
            self.progress.note(
                f"measured {job.commit[:12]} [{job.phase}]: {shown}{why} in "
                f"{format_duration(m.duration_s)}"
            )
        return m

    def _unchecked_out(self, job: Job, tree: str, slot: int, why: str) -> Measurement:
        """A commit git could not check out: a skip with the reason, nothing launched."""
        m = Measurement(
            job.commit, tree, job.phase, reason=f"checkout: {why}", skipped_at="checkout", slot=slot
        )
        m.started_at = time.time()
        m.why = job.why
        self.journal.add(m)
        self.progress.note(f"measured {job.commit[:12]} [{job.phase}]: no value ({m.reason})")
        return m

    def _evaluate(
        self,
        candidate: Candidate,
        job: Job,
        tree: str,
        early: EarlyStop | None,
        on_nothing_up: Callable[[], None],
    ) -> Measurement:
        return evaluate_candidate(
            CancellableBackend(self.backend, self.cancelled),
            candidate,
            metric=self.settings.metric,
            tree=tree,
            phase=job.phase,
            launch_attempts=self.settings.launch_attempts,
            retry_wait_s=self.settings.retry_wait_s,
            scorer=self.scorer,
            window=self.window_rule(),
            why=job.why,
            teardown=self._teardown,
            early=early,
            partial=capability(self.backend, PartialLogs),
            on_build=self._use_prefetch,
            on_launch=self._start_prefetches,
            on_step=self._check_cancelled,
            on_nothing_up=on_nothing_up,
        )

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

    def runs(self, commit: str, phase: str) -> list[Measurement]:
        """The journaled (or cached) runs of `commit` usable in `phase`; they count as used."""
        found = self.journal.for_tree(self.repo.tree_of(commit), confirm=phase == "confirm")
        if self.early_good_withdrawn or not self.settings.early_good:
            # Withdrawn, or turned off for a resumed run: early goods decide nothing.
            found = [m for m in found if m.early_verdict != "good"]
        for m in found:
            self.used[m.id] = m
        return found

    def mark(self, commit: str) -> Mark | None:
        """A person's verdict on `commit` (`bisector mark`), if any: the latest wins."""
        # Read from the file: `bisector mark` may append while this run is going.
        found = [r for r in read_journal(self.journal.path) if isinstance(r, Mark)]
        for record in reversed(found):
            if record.commit == commit:
                return record
        return None

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
        then = [j.commit for j in spare(self.slots)] if spare and self._prefetcher() else []
        for m in self.batch(missing + ahead, then):
            if m.commit in commits and m.phase == phase:
                found[commits.index(m.commit)].append(m)
        return found

    def decide(
        self,
        commit: str,
        threshold: float,
        rule: DecisionRule,
        phase: str,
        *,
        slot: int = 0,
        why: str = "",
    ) -> Decision:
        """Measure `commit` until `rule` decides (journaled runs count first)."""
        marked = self.mark(commit)
        if marked is not None and phase != "confirm":
            note = f": {marked.note}" if marked.note else ""
            return Decision(marked.verdict, f"marked {marked.verdict} by hand{note}")
        while True:
            found = self.runs(commit, phase)
            decision = rule.decide([m.value for m in found], threshold)
            if decision.verdict is not None:
                if decision.verdict == "skip" and found:
                    return Decision("skip", found[-1].reason or decision.reason)
                return _same_tree_said(commit, found, decision, self.settings.metric)
            # Journaled; the next pass sees it. Search runs past the endpoints may end their
            # warmup early (see `early_stop`); endpoints and the confirmation run full length.
            self.measure(Job(commit, phase, why), slot, early_threshold=threshold)

    def decide_all(
        self, commits: list[str], threshold: float, rule: DecisionRule, phase: str, why: str
    ) -> list[Decision]:
        """Decisions on up to `slots` commits, made concurrently (one slot each)."""
        return self.decide_each(commits, threshold, [rule] * len(commits), phase, why)

    def decide_each(
        self,
        commits: list[str],
        threshold: float,
        rules: Sequence[DecisionRule],
        phase: str,
        why: str | Sequence[str],
    ) -> list[Decision]:
        """Like `decide_all`, each commit with its own rule (and its own why, if given)."""
        whys = [why] * len(commits) if isinstance(why, str) else list(why)
        tasks = [
            functools.partial(self.decide, commit, threshold, rule, phase, slot=slot, why=said)
            for slot, (commit, rule, said) in enumerate(zip(commits, rules, whys, strict=True))
        ]
        return self.concurrently(tasks, phase)

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

    # -- early verdicts and prefetched builds ----------------------------------------

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise Interrupted("the run was interrupted")

    def _prefetcher(self) -> PrefetchBuilds | None:
        if self.settings.prefetch_builds <= 0:
            return None
        return capability(self.backend, PrefetchBuilds)

    def _start_prefetches(self) -> None:
        """The cluster launches and warms up: build what may come next, at most
        `prefetch_builds` at once (from the launch on: the candidate's own build is done)."""
        backend = self._prefetcher()
        if backend is None:
            return
        with self.lock:
            if not self._prefetch_trees_made:
                self._prefetch_trees_made = True
                n = self.settings.prefetch_builds
                self._free_prefetch_trees = [
                    self.layout.worktrees / f"prefetch-{i}" for i in range(n)
                ]
            # The free worktrees are the cap: a build ahead takes one when it starts (not
            # when its thread gets to it) and gives it back when it ends, so builds still
            # running in other slots' warmups count, and no thread finds none left.
            for commit in self._upcoming:
                if not self._free_prefetch_trees:
                    break
                if commit in self._prefetches or commit in self._in_flight_commits():
                    continue
                if backend.prefetched(commit) or self.journal.for_tree(self.repo.tree_of(commit)):
                    continue  # built already, or measured already (nothing to build)
                done = threading.Event()
                worktree = self._free_prefetch_trees.pop()
                self.worktrees.add(worktree)
                thread = threading.Thread(
                    target=self._prefetch,
                    args=(backend, commit, worktree, done),
                    name="prefetch",
                    daemon=True,
                )
                self._prefetches[commit] = done
                thread.start()

    def _in_flight_commits(self) -> set[str]:
        return {c.commit for c in self._in_flight.values()}

    def _prefetch(
        self, backend: PrefetchBuilds, commit: str, worktree: Path, done: threading.Event
    ) -> None:
        try:
            self._build_ahead(backend, commit, worktree)
        finally:
            done.set()

    def _build_ahead(self, backend: PrefetchBuilds, commit: str, worktree: Path) -> None:
        try:
            with self.lock:  # a checkout that fails (objects missing) fails only the guess
                self.repo.add_worktree(worktree, commit)
            if self._prefetch_stopping.is_set():
                raise Interrupted("the run was interrupted")
            backend.prefetch_build(commit, worktree)
        except InfraError as exc:
            with self.lock:
                self.journal.write(Prefetch(commit, exc.reason))
                self.progress.note(f"prefetched build of {commit[:12]} failed: {exc.reason}")
        except Exception as exc:  # a prefetch is a guess: its failure is never the run's
            with self.lock:
                self.journal.write(Prefetch(commit, f"{type(exc).__name__}: {exc}"))
        else:
            with self.lock:
                self.journal.write(Prefetch(commit))
                self.progress.note(f"prefetched the build of {commit[:12]} while a cluster ran")
        finally:
            with self.lock:
                self._free_prefetch_trees.append(worktree)

    def _finish_prefetches(self) -> None:
        """Builds started during this warmup end before the measurement counts."""
        with self.lock:
            pending = [done for done in self._prefetches.values() if not done.is_set()]
        for done in pending:
            done.wait()  # failures were journaled by _build_ahead

    def _stop_prefetches(self) -> None:
        """An interrupt: builds ahead are not needed; kill their commands (not teardowns),
        again while they wind down: one between two commands would start the next, and
        outlive the run. A build ahead stuck elsewhere is not waited for long."""
        self._prefetch_stopping.set()
        with self.lock:
            running = [done for done in self._prefetches.values() if not done.is_set()]
        deadline = time.monotonic() + PREFETCH_STOP_WAIT_S
        for done in running:
            while not done.is_set() and time.monotonic() < deadline:
                kill_running_commands()
                done.wait(0.05)

    def _use_prefetch(self, m: Measurement) -> None:
        """Before a build: wait for this commit's prefetch, and say whether it is used."""
        backend = self._prefetcher()
        with self.lock:
            done = self._prefetches.get(m.commit)
        if backend is None or done is None:
            return
        done.wait()
        if backend.prefetched(m.commit):
            m.prefetched_build = True
            with self.lock:
                self.progress.note(f"using the prefetched build of {m.commit[:12]}")

    # -- rounds, teardown, crashes --------------------------------------------------

    def concurrently(self, tasks: Sequence[Callable[[], T]], phase: str) -> list[T]:
        """One round: task i runs in slot i, all at once."""
        self._slot_runs.clear()
        try:
            return run_concurrently(tasks, self.cancelled, self._abandon, self._is_tearing_down)
        finally:
            # A slot deciding by repeats measures several times in a row: that many rounds.
            self.rounds[phase] += max(self._slot_runs.values(), default=0)

    def _is_tearing_down(self, slot: int) -> bool:
        with self.lock:
            return slot in self._tearing_down

    def _teardown(self, candidate: Candidate) -> None:
        """The backend's teardown, run to its end whatever signal arrives meanwhile."""
        with self.lock:
            self._tearing_down.add(candidate.slot)
        try:
            with held_during(f"the teardown of {candidate.commit[:12]}"), proc.protected():
                self.backend.teardown(candidate)
        finally:
            with self.lock:
                self._tearing_down.discard(candidate.slot)

    def _teardown_failed(self, candidate: Candidate, error: str) -> None:
        record = TeardownFailed(candidate.commit, str(candidate.eval_dir), error)
        self.journal.write(record)
        self.progress.note(
            f"TEARDOWN FAILED for {candidate.commit[:12]}: {error}; something may still be "
            f"running: bisector cleanup --run-dir {self.layout.root}"
        )

    def _tear_down_now(self, candidate: Candidate) -> None:
        try:
            self._teardown(candidate)
        except InfraError as exc:
            with self.lock:
                self._teardown_failed(candidate, exc.reason)
            return
        with self.lock:
            self.journal.write(Cleaned(str(candidate.eval_dir)))

    def _abandon(self, slot: int) -> None:
        """Tear down a slot that did not stop in time after an interrupt."""
        with self.lock:
            candidate = self._in_flight.pop(slot, None)
        if candidate is not None:
            self._tear_down_now(candidate)

    def clean_up_after_crash(self) -> None:
        """Tear down what a killed run left up (a cluster costs money), before anything else."""
        for begun in self.journal.unfinished():
            worktree = self.layout.slot_worktree(begun.slot)
            self.worktrees.add(worktree)
            self.progress.note(
                f"tearing down {begun.commit[:12]}, left up by a killed run or a failed teardown"
            )
            self.repo.add_worktree(worktree, begun.commit)
            candidate = Candidate(begun.commit, worktree, Path(begun.eval_dir), begun.slot)
            self._tear_down_now(candidate)
