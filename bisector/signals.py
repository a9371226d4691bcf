"""Signals: SIGTERM and SIGHUP unwind like Ctrl-C; teardown finishes whatever arrives meanwhile.

A leaked cluster costs real money, so once a teardown has started it runs to its
end (each of its commands has a timeout): SIGINT/SIGTERM arriving meanwhile are
reported on stderr and held, and the interrupt is raised once the teardown is done.
SIGHUP (the terminal or ssh session closing) is an interrupt too: left at its default it
would end the process on the spot, with clusters up and local daemons running.
A second signal is reported too, never obeyed blindly: kill -9 is the way to stop
at once, and the next run (or `bisector cleanup`) tears down what it leaves.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

_HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_UNWIND = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so every `finally` (teardown) runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _interrupt) for s in _UNWIND}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def held_during(what: str) -> Iterator[None]:
    """Run the block to its end; signals that arrive meanwhile are reported, then raised.

    Off the main thread (parallel slots) Python delivers no signals to the block:
    the main thread holds them the same way while it waits for the slots.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        again = " again" if len(received) > 1 else ""
        print(
            f"bisector: {name} received{again} during {what}; finishing it first so nothing "
            "is left running (kill -9 stops at once; then run `bisector cleanup`)",
            file=sys.stderr,
            flush=True,
        )

    previous = {s: signal.signal(s, hold) for s in _HELD}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:
        raise KeyboardInterrupt
