"""An interrupt while the main thread waits for the slots: every slot is waited for.

The interrupt (SIGTERM raised as KeyboardInterrupt) lands inside the main thread's
wait for slot 0. On CPython 3.11 a KeyboardInterrupt raised inside Thread.join() marks
the joined thread stopped while it still runs (python/cpython#90882): `run_concurrently`
trusted Thread.is_alive(), so it waited only for slot 1 and re-raised while slot 0 was
still tearing down; the process then exited and slot 0's cluster stayed up.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.measure.parallel import run_concurrently
from bisector.signals import sigterm_as_interrupt
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import PrefetchingBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.processes import gone, kill_listed, listed
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

TEARDOWN_S = 0.8  # slot 0's teardown, much longer than slot 1's


def test_interrupt_during_the_wait_waits_for_every_slot_to_tear_down() -> None:
    cancelled = threading.Event()
    started = threading.Barrier(3)
    torn_down: list[int] = []
    abandoned: list[int] = []

    def slot(i: int) -> str:
        started.wait()
        try:
            while not cancelled.wait(0.05):  # "launching" until the interrupt cancels it
                pass
        finally:
            if i == 0:
                time.sleep(TEARDOWN_S)
            torn_down.append(i)
        return "measured"

    def interrupt() -> None:
        started.wait()
        time.sleep(0.3)  # the main thread is in its wait for slot 0 by now
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=interrupt)
    with sigterm_as_interrupt():
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            run_concurrently([lambda: slot(0), lambda: slot(1)], cancelled, abandoned.append)
    sender.join()
    assert sorted(torn_down) == [0, 1]  # slot 0 too: before the fix, only [1]
    assert abandoned == []  # both ended in time by themselves


class SlowBuildAhead(PrefetchingBackend):
    """Builds ahead with a real command (`sleep`, a long make as far as the run knows);
    SIGTERM comes just after the first teardown of a run with one slot, while the main
    thread waits for the build ahead to finish (`Evaluator._finish_prefetches`): the same
    Python behaviour hid the build from the interrupt's kill (fixed by its Event)."""

    def __init__(self, pids: Path) -> None:
        super().__init__()
        self.pids = pids
        self.building = threading.Event()
        self.sender: threading.Timer | None = None

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        self.building.set()
        proc.run(["bash", "-c", f"echo $$ >> {self.pids}; exec sleep 30"], cwd=worktree)

    def teardown(self, candidate: Candidate) -> None:
        super().teardown(candidate)
        if self.sender is None and self.building.wait(5):
            self.sender = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
            self.sender.start()


def test_interrupt_while_waiting_for_a_build_ahead_stops_it(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [40] * 8)
    pids = tmp_path / "pids"
    backend = SlowBuildAhead(pids)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
        prefetch_builds=1,
    )
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
        assert backend.sender is not None, "no build ahead ran: the race was not exercised"
        started = listed(pids)
        assert started and all(gone(p, 1.0) for p in started)  # before the fix: sleep ran on
    finally:
        if backend.sender is not None:
            backend.sender.join()
        kill_listed(pids)
