"""The one place settings become a running bisection.

`prepare_bisection` resolves the range and builds everything that can fail on bad
input (layout, backend context, backend) without touching any state: `--dry-run`,
`doctor` and `run` all get their backend from it. `open_bisection` then takes the
locks, opens the journal, stops what a killed run left running, checks out the
base worktree, brings the backend up and, whatever happens, brings it down again.
`run`, `demo` and `nightly` run through both; `status` reads the same layout.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector import proc, run_index
from bisector.backends.base import Backend, BackendContext
from bisector.backends.registry import backend_info, create_backend
from bisector.bisection.layout import RunLayout, measurement_cache
from bisector.bisection.question import other_question, refuse, set_aside
from bisector.dirs import ensure_dir
from bisector.durations import format_duration
from bisector.errors import BisectorError, ConfigError, InfraError
from bisector.executors import create_executor
from bisector.exitcodes import RunExit
from bisector.gitrepo import BisectSession, GitRepo
from bisector.locking import own_run_dir
from bisector.logs.scores import Scorer
from bisector.measure.early import rescoring
from bisector.measure.evaluator import Evaluator, MeasureSettings
from bisector.measure.executor import Executor
from bisector.measure.journal import (
    LAUNCH_FAILED_SESSIONS,
    Failed,
    Interrupted,
    Journal,
    Resume,
    Start,
    TeardownFailed,
)
from bisector.search.decide import DecisionRule, MajorityRule
from bisector.search.progress import Progress
from bisector.settings import RunSettings
from bisector.signals import sigterm_as_interrupt
from bisector.ui.progress_lines import PlainProgress, logged_to

SessionFactory = Callable[[Any, Path], BisectSession]
BackendWrapper = Callable[[Backend], Backend]
# A setup shorter than this is not worth a line (the sim, local and kind backends).
SETUP_SAID_AFTER_S = 1.0
_GITHUB = re.compile(r"github\.com[:/]+([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


@dataclass
class PreparedBisection:
    """Everything decided before anything runs: range, layout, backend."""

    settings: RunSettings
    repo: GitRepo
    good: str
    bad: str
    layout: RunLayout
    context: BackendContext
    backend: Backend  # as the driving process holds it (Executor.driving)
    executor: Executor  # where each evaluation runs (bisector.executors)


@dataclass
class Bisection:
    """A running bisection: what the pipeline works with."""

    settings: RunSettings
    repo: GitRepo
    good: str
    bad: str
    layout: RunLayout
    backend: Backend
    journal: Journal
    session: BisectSession
    evaluator: Evaluator
    progress: Progress
    rule: DecisionRule
    # What the backend's close said when it failed (its teardown of what lasts across
    # candidates: a cluster's base, an executor's Jobs): the run's outcome says it (6).
    close_failed: list[str] = field(default_factory=list)


def backend_context(settings: RunSettings, layout: RunLayout) -> BackendContext:
    """The context a run's backend is built from, in its run directory (the good
    endpoint's tree as base)."""
    return settings.backend_context(layout.root, base_worktree=layout.good_worktree)


def prepare_bisection(
    settings: RunSettings,
    *,
    repo: GitRepo | None = None,
    backend: Backend | None = None,
    wrap_backend: BackendWrapper | None = None,
    executor: Executor | None = None,
) -> PreparedBisection:
    """Resolve the range and build the backend and the executor; config errors here,
    before any state."""
    repo = repo or GitRepo(settings.repo, given=settings.repo_given)
    good, bad = repo.resolve(settings.good), repo.resolve(settings.bad)
    repo.check_range(good, bad)
    # Absolute: backend commands run inside the candidate's worktree, not here.
    root = (
        settings.run_dir or RunLayout.default(repo.common_dir, good, bad, settings.question()).root
    )
    layout = RunLayout(root.resolve())
    context = backend_context(settings, layout)
    if backend is None and (why := metric_unmeasurable(settings)) is not None:
        # Every evaluation would be a skip, each paid for with a cluster: refuse it now.
        raise ConfigError(f"{why}; set a workload that runs ClusterLoader2 (docs/metrics.md)")
    executor = executor or create_executor(settings, layout.root)
    backend = executor.driving(backend or create_backend(settings.backend, context))
    if wrap_backend is not None:
        backend = wrap_backend(backend)
    return PreparedBisection(settings, repo, good, bad, layout, context, backend, executor)


def measure_settings(settings: RunSettings, backend: Backend) -> MeasureSettings:
    """What measuring a commit takes from the settings and the backend, decided here once."""
    traits = backend.traits
    return MeasureSettings(
        metric=settings.metric,
        launch_attempts=settings.launch_attempts,
        retry_wait_s=settings.retry_wait_s,
        # How long a warmup lasts: the backend's own length when it has one (the sim's
        # simulated duration), else [run]'s when the backend waits it, and none said when
        # something else ends it (a workload's own run: kind, local).
        warmup_s=traits.warmup_s or (settings.warmup_s if traits.waits_warmup else 0.0),
        real_time_logs=traits.real_time_logs,
        check_every_s=settings.looks_every_s,
        early_good=settings.early_good,
        prefetch_builds=settings.prefetch_builds,
        worse=settings.worse,
    )


def metric_unmeasurable(settings: RunSettings) -> str | None:
    """Why the run's backend cannot give its metric (None: it can), one line."""
    if settings.metrics.source_of(settings.metric) != "cl2":
        return None  # a log metric: every backend collects the apiserver log
    why = backend_info(settings.backend).cl2_problem(settings.backend_section)
    return None if why is None else f"{settings.metric} is a cl2 metric and {why}"


def _config_path(file: str) -> str:
    """The config's absolute path (cleanup may run from elsewhere), or "" for none."""
    return "" if file.startswith("<") else str(Path(file).resolve())


def github_remote(repo: GitRepo) -> str | None:
    """https://github.com/OWNER/REPO of the `origin` (or first) remote, for report links."""
    with contextlib.suppress(Exception):
        remotes = repo.repo.remotes
        ordered = sorted(remotes, key=lambda r: r.name != "origin")
        for remote in ordered:
            for url in remote.urls:
                match = _GITHUB.search(url)
                if match:
                    return f"https://github.com/{match.group(1)}/{match.group(2)}"
    return None


@contextlib.contextmanager
def open_bisection(
    prepared: PreparedBisection,
    *,
    progress: Progress | None = None,
    rule: DecisionRule | None = None,
    scorer: Scorer | None = None,
    session_factory: SessionFactory = BisectSession,
    slots: int | None = None,
    fresh: bool = False,
) -> Iterator[Bisection]:
    """Lock, journal, base worktree, backend up; on the way out, all of it down again.

    A run directory holding the run of another question is refused (bisector.bisection.
    question); `fresh` sets the earlier run aside and starts over, whatever it asked.
    """
    s = prepared.settings
    repo, layout, backend = prepared.repo, prepared.layout, prepared.backend
    progress = progress or PlainProgress(estimate_s=s.estimate_s)
    with contextlib.ExitStack() as stack:
        stack.enter_context(repo.lock())
        stack.enter_context(sigterm_as_interrupt())
        ensure_dir(
            layout.root, what="run directory", fix="pass --run-dir a directory bisector can write"
        )
        # One process and one clone per run directory; then, before anything builds in
        # its worktrees, stop what a killed run of it left running.
        stack.enter_context(own_run_dir(layout.root, repo.common_dir))
        run_index.remember(repo.common_dir, layout.root)  # `bisector runs` lists it
        progress = stack.enter_context(logged_to(progress, layout.progress_log, s.estimate_s))
        for line in proc.stop_orphans(layout.processes):
            progress.note(line)
        stack.enter_context(proc.track_groups(layout.processes))
        cache = measurement_cache(repo.common_dir)
        journal = Journal(layout.journal, cache, s.fingerprint())
        other = other_question(journal.records, s, prepared.good, prepared.bad)
        if fresh:
            kept = set_aside(layout, bool(journal.unfinished()))
            if kept is not None:
                progress.note(f"--fresh: the earlier run is kept in {kept}; starting over")
                journal = Journal(layout.journal, cache, s.fingerprint())
        elif other is not None:
            raise refuse(layout.root, other)
        if journal.unlaunchable:
            progress.note(
                f"{len(journal.unlaunchable)} commit(s) failed every launch in "
                f"{LAUNCH_FAILED_SESSIONS} earlier sessions, beside others that launched: kept as "
                "skips, not launched again (--fresh tries them again): "
                + ", ".join(c[:12] for c in journal.unlaunchable)
            )
        if journal.retired:
            commits = len({m.commit for m in journal.retired})
            progress.note(
                f"{commits} commit(s) an earlier session could not measure (launch, collect, "
                "the log, a full disk) are measured again: an infrastructure skip is not final"
            )
        if journal.last(Start) is None:
            journal.write(
                Start(
                    prepared.good,
                    prepared.bad,
                    s.resume_command,
                    str(repo.root),
                    _config_path(s.config_file),
                    s.backend,
                    s.question(),
                )
            )
        else:
            journal.write(Resume(s.resume_command))
        session = session_factory(repo, layout.bisect_worktree)
        evaluator = Evaluator(
            settings=measure_settings(s, backend),
            repo=repo,
            journal=journal,
            backend=backend,
            layout=layout,
            progress=progress,
            scorer=scorer or s.metrics.scorer(s.metric),
            # A scorer given as a seam (tests, benchmarks) also judges the logs so far.
            growing_scorer=rescoring(scorer) if scorer else s.metrics.growing_scorer(),
            slots=max(1, slots or 1, s.search.parallel),
            executor=prepared.executor,
        )
        b: Bisection | None = None
        try:
            try:
                repo.add_worktree(layout.good_worktree, prepared.good)  # a backend's base
                # A setup can take minutes (procs builds the 2017 harness from a cold cache
                # in about 2 minutes, nothing said but "starting"): say it begins and ends.
                progress.status(f"setting up the {s.backend} backend")
                began = time.monotonic()
                backend.setup()
                took = time.monotonic() - began
                if took >= SETUP_SAID_AFTER_S:
                    progress.note(f"the {s.backend} backend was set up in {format_duration(took)}")
            except InfraError as exc:
                raise BisectorError(f"backend {s.backend} could not start: {exc.reason}") from None
            evaluator.clean_up_after_crash()
            b = Bisection(
                s,
                repo,
                prepared.good,
                prepared.bad,
                layout,
                backend,
                journal,
                session,
                evaluator,
                progress,
                rule or MajorityRule(s.repeats, s.worse),
            )
            yield b
        except KeyboardInterrupt:
            journal.write(Interrupted())
            raise
        except BisectorError as exc:
            journal.write(Failed(str(exc)))  # `status` tells it from a killed run
            still_up = {begun.eval_dir for begun in journal.unfinished()}
            failed = [
                r
                for r in journal.records
                if isinstance(r, TeardownFailed) and r.eval_dir in still_up
            ]
            if failed and exc.exit_code == RunExit.USAGE:
                # The run stops on an error, and something it launched may still be up:
                # the exit code says so (6), not only the bad input (2).
                raise BisectorError(
                    f"{exc}; and {len(failed)} teardown(s) failed, clusters may still be "
                    f"running: bisector cleanup --run-dir {layout.root}",
                    exit_code=RunExit.LEFT_UP,
                ) from None
            raise
        except Exception as exc:
            journal.write(Failed(f"internal error: {type(exc).__name__}: {exc}"))
            raise
        finally:
            try:
                try:
                    backend.close()
                except InfraError as exc:  # said loudly by the backend; the outcome too
                    if b is not None:
                        b.close_failed.append(exc.reason)
            finally:  # whatever close() raised, the bisect session and worktrees go too
                try:
                    session.close()
                    for worktree in {*evaluator.worktrees, layout.good_worktree}:
                        repo.remove_worktree(worktree)
                    # and those a killed session of this run left (builds ahead this
                    # session did not need again): each is a whole checkout on disk
                    with contextlib.suppress(BisectorError):
                        repo.remove_worktrees_under(layout.worktrees)
                finally:  # the ticker thread ends whatever the clean-up raised
                    progress.stop()
