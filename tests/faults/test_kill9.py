"""kill -9 at every phase of an evaluation, then the same command again.

The third evaluation (the first bisect midpoint, after both endpoints are measured)
is held in a phase and the run is killed with SIGKILL: nothing of bisector runs
after that, the step in flight (its own process group) is orphaned, the cluster
stays up. The same command must then tear that cluster down before anything else,
name the true culprit, and measure nothing twice (the endpoints are not measured
again).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    measured_twice,
    run_args,
    wait_for,
    write_fault_config,
)
from tests.helpers.repo import BuiltRepo, build_repo

CULPRIT = 2
VALUES = [2] * CULPRIT + [40] * (8 - CULPRIT)
PHASES = ["build", "launch", "warmup", "collect", "teardown"]


def _killed_in(tmp_path: Path, phase: str) -> tuple[BuiltRepo, FaultDriver, list[str], str]:
    """A run killed -9 during `phase` of its third evaluation: (repo, driver, argv, commit)."""
    built = build_repo(tmp_path / "repo", VALUES)
    driver = write_fault_config(tmp_path, run={"warmup": "2s" if phase == "warmup" else "0s"})
    if phase != "warmup":
        driver.inject(f"hang-{phase}", "call:3")
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, tmp_path / "run")
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if phase == "warmup":
            wait_for(lambda: [e for e in driver.events() if e[:2] == ("end", "launch")][2:] != [])
        else:
            wait_for(lambda: driver.entered(phase), what=phase)
    finally:
        process.kill()
        process.wait()
    held = driver.calls("built")[2]
    driver.clear(f"hang-{phase}")
    return built, driver, argv, held


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_kill_9_in_a_phase_then_rerun_tears_down_first_and_repeats_nothing(
    tmp_path: Path, phase: str
) -> None:
    built, driver, argv, held = _killed_in(tmp_path, phase)
    try:
        if phase != "build":
            assert driver.up() == [held]  # SIGKILL: no teardown could run
        events_before = len(driver.events())
        again = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert "Traceback" not in again.stderr
        assert again.returncode == RunExit.FOUND, again.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout
        rerun = [e for e in driver.events()[events_before:] if e[0] == "start"]
        if phase != "build":
            assert "left up by a killed run" in again.stderr
            assert rerun[0] == ("start", "teardown", held), rerun  # before anything else
        assert driver.up() == []  # nothing leaked
        assert measured_twice(tmp_path / "run") == {}
        for endpoint in (built.mainline[0], built.mainline[-1]):
            assert driver.calls("collected").count(endpoint) == 1  # not measured again
    finally:
        driver.kill_leftovers()


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["build", "launch"])
def test_kill_9_orphans_are_stopped_before_the_rerun_builds(tmp_path: Path, phase: str) -> None:
    _built, driver, argv, _held = _killed_in(tmp_path, phase)
    try:
        assert [s.split("-")[0] for s in driver.live_steps()] == [phase]  # the orphan
        again = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert again.returncode == RunExit.FOUND, again.stderr
        assert driver.orphans_seen() == []  # no step of the killed run alive while building
        assert driver.live_steps() == []
    finally:
        driver.kill_leftovers()
