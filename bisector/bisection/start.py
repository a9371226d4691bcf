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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisector import proc
from bisector.backends.base import Backend, BackendContext
from bisector.backends.registry import create_backend
from bisector.bisection.layout import RunLayout, measurement_cache
from bisector.dirs import ensure_dir
from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import BisectSession, GitRepo
from bisector.locking import own_run_dir
from bisector.search.decide import DecisionRule, MajorityRule
from bisector.search.early import Scorer, rescoring
from bisector.search.evaluator import Evaluator, MeasureSettings
from bisector.search.journal import Journal, Resume, Start
from bisector.search.progress import PlainProgress, Progress
from bisector.settings import RunSettings
from bisector.signals import sigterm_as_interrupt

SessionFactory = Callable[[Any, Path], BisectSession]
BackendWrapper = Callable[[Backend], Backend]
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
    backend: Backend


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


def backend_context(settings: RunSettings, layout: RunLayout) -> BackendContext:
    """The typed context every backend is built from (the good endpoint's tree as base)."""
    return BackendContext(
        settings.backend_section,
        layout.root,
        settings.warmup_s,
        settings.seed,
        base_worktree=layout.good_worktree,
    )


def prepare_bisection(
    settings: RunSettings,
    *,
    repo: GitRepo | None = None,
    backend: Backend | None = None,
    wrap_backend: BackendWrapper | None = None,
) -> PreparedBisection:
    """Resolve the range and build the backend; config errors here, before any state."""
    repo = repo or GitRepo(settings.repo)
    good, bad = repo.resolve(settings.good), repo.resolve(settings.bad)
    repo.check_range(good, bad)
    # Absolute: backend commands run inside the candidate's worktree, not here.
    root = (
        settings.run_dir or RunLayout.default(repo.common_dir, good, bad, settings.question()).root
    )
    layout = RunLayout(root.resolve())
    context = backend_context(settings, layout)
    backend = backend or create_backend(settings.backend, context)
    if wrap_backend is not None:
        backend = wrap_backend(backend)
    return PreparedBisection(settings, repo, good, bad, layout, context, backend)


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
) -> Iterator[Bisection]:
    """Lock, journal, base worktree, backend up; on the way out, all of it down again."""
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
        for line in proc.stop_orphans(layout.processes):
            progress.note(line)
        stack.enter_context(proc.track_groups(layout.processes))
        journal = Journal(layout.journal, measurement_cache(repo.common_dir), s.fingerprint())
        if journal.last(Start) is None:
            journal.write(
                Start(
                    prepared.good,
                    prepared.bad,
                    s.resume_command,
                    str(repo.root),
                    _config_path(s.config_file),
                    s.backend,
                )
            )
        else:
            journal.write(Resume(s.resume_command))
        session = session_factory(repo, layout.bisect_worktree)
        evaluator = Evaluator(
            settings=MeasureSettings(
                metric=s.metric,
                launch_attempts=s.launch_attempts,
                retry_wait_s=s.retry_wait_s,
                warmup_s=s.warmup_s if getattr(backend, "waits_warmup", True) else 0.0,
                real_time_logs=bool(getattr(backend, "real_time_logs", False)),
                # Early verdicts only for a metric a look at the growing log can decide.
                check_every_s=s.check_every_s if s.metrics.watchable(s.metric) else None,
                early_good=s.early_good,
                prefetch_builds=s.prefetch_builds,
            ),
            repo=repo,
            journal=journal,
            backend=backend,
            layout=layout,
            progress=progress,
            scorer=scorer or s.metrics.scorer(s.metric),
            # A scorer given as a seam (tests, benchmarks) also judges the logs so far.
            growing_scorer=rescoring(scorer) if scorer else s.metrics.growing_scorer(),
            slots=max(1, slots or 1, s.search.parallel),
        )
        try:
            try:
                repo.add_worktree(layout.good_worktree, prepared.good)  # a backend's base
                backend.setup()
            except InfraError as exc:
                raise BisectorError(f"backend {s.backend} could not start: {exc.reason}") from None
            evaluator.clean_up_after_crash()
            yield Bisection(
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
        finally:
            try:
                with contextlib.suppress(InfraError):
                    backend.close()
            finally:  # whatever close() raised, the bisect session and worktrees go too
                session.close()
                for worktree in {*evaluator.worktrees, layout.good_worktree}:
                    repo.remove_worktree(worktree)
                progress.stop()
