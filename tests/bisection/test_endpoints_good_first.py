"""A good endpoint that cannot be measured stops the run before the bad one is launched
(issue 29: the real hunt launched and measured the bad endpoint, 35 minutes on a cluster,
and then stopped with `the good endpoint ... could not be measured`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import FaultDriver, run_args, write_fault_config
from tests.helpers.repo import build_repo

VALUES = [2] * 3 + [40] * 5


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[FaultDriver]:
    made = write_fault_config(tmp_path)
    yield made
    made.kill_leftovers()


def test_a_good_endpoint_that_cannot_launch_stops_before_the_bad_one(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[0], built.mainline[-1]
    driver.inject("flaky", good)  # every launch of the good endpoint fails
    argv = run_args(built.path, good, bad, driver, tmp_path / "run")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == RunExit.USAGE, result.stderr
    assert f"the good endpoint {good[:12]} could not be measured" in result.stderr
    assert driver.calls("launches").count(good) == 3  # its launch attempts
    assert bad not in driver.calls("launches")  # no cluster paid for the bad endpoint
    assert driver.up() == []


def test_with_a_good_endpoint_measured_the_bad_one_follows(
    tmp_path: Path, driver: FaultDriver
) -> None:
    """The order is the only change: both endpoints are still measured, then the search."""
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[0], built.mainline[-1]
    argv = run_args(built.path, good, bad, driver, tmp_path / "run")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == RunExit.FOUND, result.stderr
    launches = driver.calls("launches")
    assert launches[:2] == [good, bad]
