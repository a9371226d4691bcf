"""`--parallel K`: run up to K evaluations at once, one per backend slot, in threads.

Backends block on subprocesses, so threads are enough. The Evaluator serializes
journal appends, worktree changes and progress with its lock; git bisect marks
happen on the calling thread after a round. On Ctrl-C/SIGTERM (delivered to the
main thread only) every slot is stopped and torn down before the interrupt
propagates: the cancel flag makes each slot's backend refuse new steps except
teardown, the commands in flight (each the leader of its own process group,
see bisector.proc) are killed, and every slot then runs its own teardown.
A slot that does not finish in time is torn down from here.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from bisector import proc
from bisector.backends.base import Backend, Candidate, ForwardingBackend
from bisector.errors import InfraError
from bisector.signals import held_during

T = TypeVar("T")
STOP_WAIT_S = 60.0  # how long slots get to tear down after an interrupt


class Interrupted(InfraError):
    kind = "interrupted"


class Worker:
    """A daemon thread whose end is its own flag, never Thread.is_alive() or join().

    A KeyboardInterrupt raised inside Thread.join() marks the joined thread stopped while
    it still runs (CPython 3.11, python/cpython#90882): after an interrupt, a slot believed
    done was neither waited for nor torn down from here, and the process exited with its
    teardown unfinished (its cluster left up). Builds ahead keep an Event the same way
    (bisector.measure.evaluator).
    """

    def __init__(self, target: Callable[[], object]) -> None:
        self.ended = threading.Event()

        def run() -> None:
            try:
                target()
            finally:
                self.ended.set()

        self.thread = threading.Thread(target=run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def is_alive(self) -> bool:
        """Started and not ended (never started counts as running: start at once)."""
        return not self.ended.is_set()

    def join(self, timeout: float | None = None) -> None:
        self.ended.wait(timeout)


class CancellableBackend(ForwardingBackend):
    """A slot's view of the backend: once cancelled, every step but teardown refuses."""

    def __init__(self, backend: Backend, cancelled: threading.Event) -> None:
        super().__init__(backend)
        self.cancelled = cancelled

    def _check(self) -> None:
        if self.cancelled.is_set():
            raise Interrupted("the run was interrupted")

    def build(self, candidate: Candidate) -> None:
        self._check()
        self.inner.build(candidate)

    def launch(self, candidate: Candidate) -> None:
        self._check()
        self.inner.launch(candidate)

    def warmup(self, candidate: Candidate) -> None:
        self._check()
        self.inner.warmup(candidate)

    def collect(self, candidate: Candidate) -> list[Path]:
        self._check()
        return self.inner.collect(candidate)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        self._check()
        return super().warmup_steps(candidate, every_s)

    def peek(self, candidate: Candidate) -> list[Path]:
        self._check()
        return super().peek(candidate)


def kill_running_commands() -> None:
    """SIGKILL the running commands of every slot (bisector.proc starts each in its own
    process group); teardown commands (`proc.protected`) are spared: they must finish."""
    proc.kill_unprotected()


def run_concurrently(
    tasks: Sequence[Callable[[], T]],
    cancelled: threading.Event,
    on_abandoned: Callable[[int], None],
    tearing_down: Callable[[int], bool] = lambda _slot: False,
) -> list[T]:
    """Results of `tasks`, run at once; one task runs on this thread (no overhead).

    On an interrupt: set `cancelled`, kill running commands (not teardowns), wait for
    the tasks to tear down (a slot in its teardown is waited for to the end, with
    further signals held), call `on_abandoned(i)` for any other still running, and
    re-raise.
    """
    if len(tasks) == 1:
        return [tasks[0]()]
    results: dict[int, T] = {}
    errors: dict[int, BaseException] = {}

    def work(i: int) -> None:
        try:
            results[i] = tasks[i]()
        except BaseException as exc:  # re-raised on the calling thread
            errors[i] = exc

    workers = [Worker(functools.partial(work, i)) for i in range(len(tasks))]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            while worker.is_alive():
                worker.join(0.2)  # short waits: signals reach the main thread promptly
    except BaseException:
        cancelled.set()
        kill_running_commands()
        with held_during("the teardown of every slot"):
            deadline = time.monotonic() + STOP_WAIT_S
            for i, worker in enumerate(workers):
                while worker.is_alive() and (time.monotonic() < deadline or tearing_down(i)):
                    worker.join(0.2)
                    kill_running_commands()  # a command that was still starting
            for i, worker in enumerate(workers):
                if worker.is_alive():
                    on_abandoned(i)
        raise
    for i in sorted(errors):
        raise errors[i]
    return [results[i] for i in range(len(tasks))]
