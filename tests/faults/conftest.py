"""The fault suite's fixtures: a small repository and the fault-injecting backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.faults import FaultDriver, write_fault_config


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[FaultDriver]:
    """The fault backend; whatever its steps left running is stopped after the test."""
    made = write_fault_config(tmp_path)
    yield made
    made.kill_leftovers()
