"""Fixtures shared by the whole suite; reusable builders live in tests/helpers/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.gcs import gcs_emulator


@pytest.fixture(scope="session")
def gcs_client() -> Iterator[Any]:
    """A google-cloud-storage client on a local emulator; STORAGE_EMULATOR_HOST is set."""
    with gcs_emulator() as client:
        yield client
