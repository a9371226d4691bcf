"""Launches that fail a few times, fail for good, or leave a daemon holding stdout."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    cached_ids,
    measurements,
    run_args,
    struck_measurements,
    write_fault_config,
)
from tests.helpers.repo import BuiltRepo, build_repo

CULPRIT = 2
VALUES = [2] * CULPRIT + [40] * (8 - CULPRIT)


def _run(built: BuiltRepo, driver: FaultDriver, run_dir: Path) -> subprocess.CompletedProcess[str]:
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_launch_failing_twice_then_working_is_retried_and_each_attempt_torn_down(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    driver.inject("flaky", "calls:1-2")  # the good endpoint's first two attempts fail
    result = _run(built, driver, tmp_path / "run")
    assert result.returncode == RunExit.FOUND, result.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout
    first = next(m for m in measurements(tmp_path / "run") if m["commit"] == good)
    assert first["launch_attempts"] == 3 and first["value"] == 2.0
    # each half-created cluster is torn down before the next attempt
    steps = [(e[1], e[2]) for e in driver.events() if e[0] == "start"]
    launches = [i for i, s in enumerate(steps) if s == ("launch", good)]
    assert len(launches) == 3
    for a, b in itertools.pairwise(launches):
        assert ("teardown", good) in steps[a:b]
    assert driver.up() == []


@pytest.mark.slow
def test_launch_failing_every_attempt_is_a_skip_not_cached_and_torn_down(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    driver.inject("flaky", "calls:3-5")  # every attempt of the first midpoint fails
    result = _run(built, driver, tmp_path / "run")
    (struck,) = struck_measurements(driver, tmp_path / "run")
    assert struck["value"] is None and struck["launch_attempts"] == 3
    assert "launch" in struck["reason"] and "did not come up" in struck["reason"]
    assert struck["id"] not in cached_ids(built.path)  # an outage: a later run tries again
    assert driver.calls("teardowns").count(struck["commit"]) == 3  # the last attempt's too
    assert driver.up() == []
    assert result.returncode == RunExit.FOUND, result.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout


@pytest.mark.slow
def test_daemonising_launch_returns_when_the_script_exits(tmp_path: Path) -> None:
    """A launch like `local-up.sh` starting the apiserver with `&` and no redirect."""
    built = build_repo(tmp_path / "repo", VALUES)
    driver = write_fault_config(tmp_path, run={"launch_attempts": 1}, timeout="5s")
    try:
        driver.inject("daemon")
        result = _run(built, driver, tmp_path / "run")
        assert "Traceback" not in result.stderr
        found = measurements(tmp_path / "run")
        assert found and all(m["value"] is not None for m in found), [m["reason"] for m in found]
        assert all(m["duration_s"] < 5 for m in found)  # not held until the timeout
        assert result.returncode == RunExit.FOUND, result.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout
        assert driver.up() == []
        assert driver.live_daemons() == []  # each teardown stopped its daemon
    finally:
        driver.kill_leftovers()
