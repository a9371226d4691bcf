"""Fixtures shared by the whole suite; reusable builders live in tests/helpers/."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.gcs import gcs_emulator

# A suite started under `nohup`, or as a background job of a non-interactive shell, begins
# with SIGHUP or SIGINT ignored, and every bisector it starts inherits that: bisector keeps
# a signal ignored at its start ignored (bisector.signals: the user asked to outlive it),
# so each test that sends one would see it do nothing. The tests want a terminal's defaults.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(scope="session")
def gcs_client() -> Iterator[Any]:
    """A google-cloud-storage client on a local emulator; STORAGE_EMULATOR_HOST is set."""
    with gcs_emulator() as client:
        yield client
