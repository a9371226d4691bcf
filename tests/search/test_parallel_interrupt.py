"""An interrupt while the main thread waits for the slots: every slot is waited for.

The interrupt (SIGTERM raised as KeyboardInterrupt) lands inside the main thread's
wait for slot 0. On CPython 3.11 a KeyboardInterrupt raised inside Thread.join() marks
the joined thread stopped while it still runs (python/cpython#90882): `run_concurrently`
trusted Thread.is_alive(), so it waited only for slot 1 and re-raised while slot 0 was
still tearing down; the process then exited and slot 0's cluster stayed up.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from bisector.search.parallel import run_concurrently
from bisector.signals import sigterm_as_interrupt

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
