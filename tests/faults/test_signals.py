"""SIGINT and SIGTERM at every phase of an evaluation, then the same command again.

The first evaluation (the good endpoint) is held in a phase (a step that sleeps,
or the warmup) and the run gets the signal there. Promises: exit 130 with the
resume command and no traceback; the step in flight is stopped (its process
group), except a teardown, which finishes (a second signal is reported, not
obeyed); every cluster launched is torn down; the interrupted evaluation is not
journaled as a measurement; the same command then names the true culprit without
measuring anything twice.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    measured_twice,
    measurements,
    run_args,
    wait_for,
    write_fault_config,
)
from tests.helpers.repo import build_repo

CULPRIT = 2
VALUES = [2, 2, 40, 40]
PHASES = ["build", "launch", "warmup", "collect", "teardown"]
SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]


def _hold(driver: FaultDriver, phase: str) -> None:
    """Keep the first evaluation in `phase` long enough to signal it there."""
    if phase == "teardown":
        driver.inject("slow-teardown", "call:1")
    elif phase != "warmup":
        driver.inject(f"hang-{phase}", "call:1")


def _in_phase(driver: FaultDriver, phase: str, commit: str) -> bool:
    if phase == "warmup":  # launched, not collecting: bisector sleeps the warmup
        return ("end", "launch", commit) in driver.events()
    return driver.entered(phase)


@pytest.mark.slow
@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize(
    ("phase", "signals"), [*((p, 1) for p in PHASES), ("teardown", 2)], ids=[*PHASES, "teardown-x2"]
)
def test_signal_in_a_phase_tears_down_and_the_rerun_resumes(
    tmp_path: Path, signum: signal.Signals, phase: str, signals: int
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    warmup = "3s" if phase == "warmup" else "0s"
    driver = write_fault_config(tmp_path, run={"warmup": warmup})
    try:
        _hold(driver, phase)
        run_dir = tmp_path / "run"
        argv = run_args(built.path, good, built.mainline[-1], driver, run_dir)
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: _in_phase(driver, phase, good), what=f"{phase} of {good[:12]}")
        for _ in range(signals):
            process.send_signal(signum)
            time.sleep(0.3)
        _out, err = process.communicate(timeout=60)

        assert process.returncode == RunExit.INTERRUPTED, err
        assert "Traceback" not in err
        assert "Resume with: bisector run" in err
        assert driver.live_steps() == []  # the step in flight was stopped, not left running
        assert driver.up() == []  # whatever was launched is torn down
        if phase != "build":
            assert driver.events()[-1] == ("end", "teardown", good)  # ran to its end, last
        if phase == "teardown":
            name = signal.Signals(signum).name
            assert f"{name} received during the teardown of {good[:12]}" in err
            if signals == 2:
                assert f"{name} received again during the teardown" in err
        assert measurements(run_dir) == []  # interrupted is not a skip, nor a value

        driver.clear("slow-teardown")
        driver.clear(f"hang-{phase}")
        again = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert again.returncode == RunExit.FOUND, again.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout
        assert measured_twice(run_dir) == {}
        assert driver.up() == []
    finally:
        driver.kill_leftovers()


def _tearing_down(driver: FaultDriver) -> set[str]:
    """Commits whose teardown has started and not ended."""
    started: set[str] = set()
    for edge, step, commit in driver.events():
        if step == "teardown":
            (started.add if edge == "start" else started.discard)(commit)
    return started


@pytest.mark.slow
@pytest.mark.parametrize("signum", SIGNALS)
def test_signal_while_two_slots_tear_down_lets_both_finish(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """--parallel 2: both endpoints' teardowns run in slot threads when the signal comes."""
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[0], built.mainline[-1]
    driver = write_fault_config(tmp_path)
    try:
        driver.inject("slow-teardown", good, bad)
        run_dir = tmp_path / "run"
        argv = [*run_args(built.path, good, bad, driver, run_dir), "--parallel", "2"]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: _tearing_down(driver) == {good, bad}, what="both teardowns")
        process.send_signal(signum)
        _out, err = process.communicate(timeout=60)
        assert process.returncode == RunExit.INTERRUPTED, err
        assert "Traceback" not in err
        assert {("end", "teardown", good), ("end", "teardown", bad)} <= set(driver.events())
        assert driver.up() == []
        assert driver.live_steps() == []
        driver.clear("slow-teardown")
        again = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert again.returncode == RunExit.FOUND, again.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout
        assert measured_twice(run_dir) == {}
        assert driver.up() == []
    finally:
        driver.kill_leftovers()
