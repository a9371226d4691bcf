"""The procs backend's tests share one world: a synthetic kubernetes repository and the fake
toolchain (tests/helpers/procs_backend.py) on PATH; a module that needs more makes its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.procs_backend import ProcsWorld, fake_env, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcsWorld]:
    made = make_world(tmp_path)
    with fake_env(monkeypatch, made):
        yield made
