"""SIGTERM and SIGHUP unwind like Ctrl-C; a teardown holds all three until it ends."""

from __future__ import annotations

import os
import signal
import time

import pytest

from bisector import signals
from bisector.signals import held_during, sigterm_as_interrupt


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_termination_signal_unwinds_so_teardowns_run(signum: signal.Signals) -> None:
    # SIGHUP (the terminal or ssh session going away) left at its default ended the run on
    # the spot, with a local cluster's daemons still running.
    cleaned = []
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        try:
            os.kill(os.getpid(), signum)
            for _ in range(100):  # the handler runs at the next check, at the latest here
                time.sleep(0.01)
            raise AssertionError("the signal did not interrupt")
        finally:
            cleaned.append("teardown")
    assert cleaned == ["teardown"]
    assert signal.getsignal(signum) is not None  # the previous handler is back


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_teardown_runs_to_its_end_then_the_signal_is_raised(
    signum: signal.Signals, capfd: pytest.CaptureFixture[str]
) -> None:
    finished = []
    with pytest.raises(KeyboardInterrupt), held_during("the teardown of x"):
        os.kill(os.getpid(), signum)
        finished.append(True)
    assert finished == [True]
    assert (
        f"{signal.Signals(signum).name} received during the teardown of x" in capfd.readouterr().err
    )


def test_an_interrupt_that_lands_in_a_finalizer_is_raised_again() -> None:
    """Python runs finalizers (`__del__`, weakref callbacks) between any two bytecodes; a
    KeyboardInterrupt the first signal raises inside one is printed and dropped, and the
    run went on with every later signal ignored as "received while stopping" (a full
    suite, 4 December 2026: a SIGHUP during the report's upload, its traceback ending in
    weakref.py `remove`, and the run hung until killed). The signal is delivered again."""

    class SignalsWhileFinalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):  # the handler runs here, inside the finalizer
                time.sleep(0.001)

    reached_the_end = False
    with pytest.raises(KeyboardInterrupt), signals.handling_termination():
        finalized = SignalsWhileFinalized()
        del finalized
        for _ in range(2000):  # the interrupt raised again lands in this loop
            time.sleep(0.001)
        reached_the_end = True
    assert not reached_the_end
