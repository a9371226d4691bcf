"""Prefetched builds: while a cluster warms up, the commits the search may measure next are built.

`[run] prefetch_builds` N, with a backend that can `prefetch_build` (found through its
wrappers: bisector.backends.base.capability): from a candidate's launch on, up to N of
the commits the search named (`upcoming`, likeliest first) are built in worktrees of
their own (`prefetch-<i>`), each in a daemon thread; all have ended before the
measurement returns. A build ahead is a guess: its failure is journaled (`prefetch`
with the error) and never a verdict; the evaluation then builds again itself. An
interrupt stops starting them and kills their commands (not teardowns).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bisector.backends.base import Backend, PrefetchBuilds, capability
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.measure.journal import Journal, Prefetch
from bisector.measure.measurement import Measurement
from bisector.measure.parallel import Interrupted, kill_running_commands
from bisector.search.progress import Progress

STOP_WAIT_S = 2.0  # how long an interrupt waits for builds ahead to wind down


class Prefetcher:
    """Builds ahead for one run; shares the evaluator's lock (journal, progress, worktrees)."""

    def __init__(
        self,
        *,
        backend: Backend,
        builds: int,
        repo: GitRepo,
        journal: Journal,
        worktrees_dir: Path,  # the run's worktrees/: builds ahead check out there
        progress: Progress,
        lock: threading.RLock,
        worktrees: set[Path],
        in_flight: Callable[[], set[str]],
    ) -> None:
        self.backend = capability(backend, PrefetchBuilds) if builds > 0 else None
        self.builds = builds
        self.repo = repo
        self.journal = journal
        self.worktrees_dir = worktrees_dir
        self.progress = progress
        self.lock = lock
        self.worktrees = worktrees  # the evaluator's: every worktree it removes at the end
        self.in_flight = in_flight  # commits being evaluated now (nothing to build ahead)
        self.upcoming: list[str] = []
        # commit -> set once its build ahead (a daemon thread: an interrupted run does not
        # wait for a build nobody needs; its commands are killed, see `stop`) has ended.
        # An Event, not Thread.is_alive(): on CPython 3.11 an interrupt inside Thread.join()
        # marks a running thread stopped (python/cpython#90882), and a build believed ended
        # would not be killed.
        self._done: dict[str, threading.Event] = {}
        self._free_trees: list[Path] = []
        self._trees_made = False
        self._stopping = threading.Event()  # an interrupt: start no build ahead

    @property
    def enabled(self) -> bool:
        return self.backend is not None

    def set_upcoming(self, commits: Sequence[str]) -> None:
        """Commits the search may measure next, likeliest first."""
        with self.lock:
            self.upcoming = list(dict.fromkeys(commits))

    def start(self) -> None:
        """The cluster launches and warms up: build what may come next, at most `builds`
        at once (from the launch on: the candidate's own build is done)."""
        backend = self.backend
        if backend is None:
            return
        with self.lock:
            if not self._trees_made:
                self._trees_made = True
                self._free_trees = [
                    self.worktrees_dir / f"prefetch-{i}" for i in range(self.builds)
                ]
            # The free worktrees are the cap: a build ahead takes one when it starts (not
            # when its thread gets to it) and gives it back when it ends, so builds still
            # running in other slots' warmups count, and no thread finds none left.
            busy = self.in_flight()
            for commit in self.upcoming:
                if not self._free_trees:
                    break
                if commit in self._done or commit in busy:
                    continue
                if backend.prefetched(commit) or self.journal.for_tree(self.repo.tree_of(commit)):
                    continue  # built already, or measured already (nothing to build)
                done = threading.Event()
                worktree = self._free_trees.pop()
                self.worktrees.add(worktree)
                thread = threading.Thread(
                    target=self._run,
                    args=(backend, commit, worktree, done),
                    name="prefetch",
                    daemon=True,
                )
                self._done[commit] = done
                thread.start()

    def _run(
        self, backend: PrefetchBuilds, commit: str, worktree: Path, done: threading.Event
    ) -> None:
        try:
            self._build_ahead(backend, commit, worktree)
        finally:
            done.set()

    def _build_ahead(self, backend: PrefetchBuilds, commit: str, worktree: Path) -> None:
        self.progress.prefetching(commit, True)  # shown beside the evaluation's phase
        try:
            with self.lock:  # a checkout that fails (objects missing) fails only the guess
                self.repo.add_worktree(worktree, commit)
            if self._stopping.is_set():
                raise Interrupted("the run was interrupted")
            backend.prefetch_build(commit, worktree)
        except InfraError as exc:
            with self.lock:
                self.journal.write(Prefetch(commit, exc.reason))
                self.progress.detail(f"prefetched build of {commit[:12]} failed: {exc.reason}")
        except Exception as exc:  # a prefetch is a guess: its failure is never the run's
            with self.lock:
                self.journal.write(Prefetch(commit, f"{type(exc).__name__}: {exc}"))
        else:
            with self.lock:
                self.journal.write(Prefetch(commit))
                self.progress.detail(f"prefetched the build of {commit[:12]} while a cluster ran")
        finally:
            self.progress.prefetching(commit, False)
            with self.lock:
                self._free_trees.append(worktree)

    def finish(self) -> None:
        """Builds started during this warmup end before the measurement counts."""
        with self.lock:
            pending = {c: done for c, done in self._done.items() if not done.is_set()}
        if pending:
            ahead = ", ".join(c[:12] for c in pending)
            self.progress.note(f"waiting for the build ahead of {ahead} before the next run")
        for done in pending.values():
            done.wait()  # failures were journaled by _build_ahead

    def stop(self) -> None:
        """An interrupt: builds ahead are not needed; kill their commands (not teardowns),
        again while they wind down: one between two commands would start the next, and
        outlive the run. A build ahead stuck elsewhere is not waited for long."""
        self._stopping.set()
        with self.lock:
            running = [done for done in self._done.values() if not done.is_set()]
        deadline = time.monotonic() + STOP_WAIT_S
        for done in running:
            while not done.is_set() and time.monotonic() < deadline:
                kill_running_commands()
                done.wait(0.05)

    def use(self, m: Measurement) -> None:
        """Before a build: wait for this commit's prefetch, and say whether it is used."""
        backend = self.backend
        with self.lock:
            done = self._done.get(m.commit)
        if backend is None or done is None:
            return
        done.wait()
        if backend.prefetched(m.commit):
            m.prefetched_build = True
            with self.lock:
                self.progress.detail(f"using the prefetched build of {m.commit[:12]}")
