"""Fixtures shared by the whole suite; reusable builders live in tests/helpers/."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from bisector.signals import TERMINATING
from tests.helpers.gcs import gcs_emulator

# A suite started under `nohup`, or as a background job of a non-interactive shell, begins
# with SIGHUP, or SIGINT and SIGQUIT (POSIX: `cmd &` in a shell without job control), ignored,
# and every bisector it starts inherits that: bisector keeps a signal ignored at its start
# ignored (bisector.signals: the user asked to outlive it), so each test that sends one saw
# it do nothing and waited out its timeout (SIGQUIT, 4 December 2026: /proc/PID/status
# SigIgn 0x1001004 in the pytest processes). The tests want a terminal's defaults.
for _signum in TERMINATING:
    if signal.getsignal(_signum) == signal.SIG_IGN:
        default = signal.default_int_handler if _signum == signal.SIGINT else signal.SIG_DFL
        signal.signal(_signum, default)


@pytest.fixture(scope="session")
def gcs_client() -> Iterator[Any]:
    """A google-cloud-storage client on a local emulator; STORAGE_EMULATOR_HOST is set."""
    with gcs_emulator() as client:
        yield client


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow run first, each group in its own order. Four workers on two
    cores keep both busy until the queue runs dry; what is left then is the longest tests
    each worker holds, one core idle while the last one ends. Slow tests first leave
    short ones for that end (the order of the tests otherwise changes nothing they see)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
