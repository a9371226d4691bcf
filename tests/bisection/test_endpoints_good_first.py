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


@pytest.mark.slow
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


def test_swapped_good_and_bad_commits_are_said_to_be_swapped(
    tmp_path: Path, driver: FaultDriver
) -> None:
    """--good and --bad given the wrong way round: bad is good's ancestor; the fix said is
    the swap, before anything is measured."""
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[-1], built.mainline[0]  # swapped by mistake
    argv = run_args(built.path, good, bad, driver, tmp_path / "run")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == RunExit.USAGE, result.stderr
    assert f"rerun with --good {bad[:12]} --bad {good[:12]}" in result.stderr
    assert result.stderr.count("\n") == 1
    assert driver.calls("launches") == []


# The older endpoint scores worse: a metric read the wrong way round, or an improvement.
REVERSED = [40] * 3 + [2] * 5


def test_endpoints_that_score_reversed_suggest_the_swap(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", REVERSED)
    good, bad = built.mainline[0], built.mainline[-1]
    argv = run_args(built.path, good, bad, driver, tmp_path / "run")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == RunExit.USAGE, result.stderr
    assert f"the good endpoint {good[:12]} scored worse (40) than the bad" in result.stderr
    assert f"rerun with --good {bad[:12]} --bad {good[:12]}" in result.stderr


def test_reversed_endpoints_against_a_given_threshold_suggest_the_swap(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", REVERSED)
    good, bad = built.mainline[0], built.mainline[-1]
    argv = [*run_args(built.path, good, bad, driver, tmp_path / "run"), "--threshold", "10"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == RunExit.USAGE, result.stderr
    assert "endpoints do not separate at threshold 10" in result.stderr
    assert f"rerun with --good {bad[:12]} --bad {good[:12]}" in result.stderr
