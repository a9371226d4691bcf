"""Fixtures shared by the whole suite; reusable builders live in tests/helpers/."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from bisector.signals import TERMINATING
from tests.helpers.gcs import gcs_emulator

# A suite started under `nohup`, or as a background job of a non-interactive shell, begins
# with SIGHUP or SIGINT ignored, and every bisector it starts inherits that: bisector keeps
# a signal ignored at its start ignored (bisector.signals: the user asked to outlive it),
# so each test that sends one would see it do nothing. The tests want a terminal's defaults.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def _signal_dispositions_restored() -> Iterator[None]:
    """Each test leaves this process's signal handlers as it found them. A test that runs
    `bisector.cli.main` in this process ends with `signals.ignore_from_now_on()` (right for
    a real process about to exit): every termination signal SIG_IGN here from then on, and
    each bisector a later test starts inherits that and keeps it (a signal ignored at start
    stays ignored): SIGQUIT and SIGHUP sent by the signal tests then did nothing and the
    runs hung until their 60 s timeout (two failures in a full suite, 4 December 2026)."""
    before = {s: signal.getsignal(s) for s in TERMINATING if signal.getsignal(s) is not None}
    yield
    for signum, handler in before.items():
        if signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


@pytest.fixture(scope="session")
def gcs_client() -> Iterator[Any]:
    """A google-cloud-storage client on a local emulator; STORAGE_EMULATOR_HOST is set."""
    with gcs_emulator() as client:
        yield client
