"""Teardowns that fail or hang: said loudly, exit 6, and torn down by the next run or cleanup.

The third evaluation's teardown (the first bisect midpoint's) fails with exit 1,
or hangs past the backend's `timeout`. Its cluster stays up: the run must say so on
stderr, in report.json/report.md and the journal, exit 6 (RunExit.LEFT_UP), and the
cluster must be torn down by `bisector cleanup --run-dir DIR` or by running the same
command again, before that run does anything else.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    bisector_argv,
    journal,
    measured_twice,
    report,
    run_args,
    write_fault_config,
)
from tests.helpers.repo import BuiltRepo, build_repo

CULPRIT = 2
VALUES = [2] * CULPRIT + [40] * (8 - CULPRIT)
FAULTS = [
    pytest.param("fail-teardown", "exited with code 1", id="failing-teardown"),
    pytest.param("hang-teardown", "timed out", id="hung-teardown"),
]


def _run(built: BuiltRepo, driver: FaultDriver, run_dir: Path) -> subprocess.CompletedProcess[str]:
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _failed_run(tmp_path: Path, fault: str, why: str) -> tuple[BuiltRepo, FaultDriver, str]:
    """A run whose third teardown fails: everything it must say about it, checked."""
    built = build_repo(tmp_path / "repo", VALUES)
    driver = write_fault_config(tmp_path, timeout="3s")
    driver.inject(fault, "call:3")
    run_dir = tmp_path / "run"
    result = _run(built, driver, run_dir)
    (left,) = {commit for _, commit, _ in driver.injected()}
    assert driver.up() == [left]  # the fault did leave it up: what follows is about that
    assert "Traceback" not in result.stderr
    assert result.returncode == RunExit.LEFT_UP, result.stderr
    assert f"TEARDOWN FAILED for {left[:12]}" in result.stderr
    assert why in result.stderr
    assert f"bisector cleanup --run-dir {run_dir}" in result.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout  # the answer still stands
    (failure,) = report(run_dir)["teardown_failures"]
    assert failure["commit"] == left and why in failure["error"]
    assert left[:12] in (run_dir / "report.md").read_text().split("eardown")[-1]
    assert any(r["type"] == "teardown_failed" for r in journal(run_dir))
    assert not any(
        r["type"] == "cleaned" and left[:12] in r["eval_dir"] for r in journal(run_dir)
    )  # never journaled `cleaned` for what is still up
    assert driver.live_steps() == []  # the hung teardown was stopped at its timeout
    driver.clear(fault)
    return built, driver, left


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "why"), FAULTS)
def test_failed_teardown_is_loud_and_the_next_run_tears_it_down(
    tmp_path: Path, fault: str, why: str
) -> None:
    built, driver, left = _failed_run(tmp_path, fault, why)
    launches_before = len(driver.calls("launches"))
    events_before = len(driver.events())
    again = _run(built, driver, tmp_path / "run")
    assert "Traceback" not in again.stderr
    assert driver.up() == []
    first = driver.events()[events_before:][:2]
    assert first == [("start", "teardown", left), ("end", "teardown", left)]  # before all else
    # The evaluation whose teardown failed was a skip (its cluster in doubt): an
    # infrastructure skip is never final, so it alone is measured again (issue 20).
    relaunched = driver.calls("launches")[launches_before:]
    assert relaunched[:1] == [left] and relaunched.count(left) == 1
    assert set(measured_twice(tmp_path / "run")) <= {(left, "bisect")}
    assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "why"), FAULTS)
def test_rerun_that_tore_it_down_says_nothing_is_left_up(
    tmp_path: Path, fault: str, why: str
) -> None:
    built, driver, _left = _failed_run(tmp_path, fault, why)
    again = _run(built, driver, tmp_path / "run")
    assert driver.up() == []  # torn down now: saying otherwise sends people hunting
    assert "may still be running" not in again.stderr
    assert again.returncode == RunExit.FOUND, again.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "why"), FAULTS)
def test_failed_teardown_is_torn_down_by_bisector_cleanup(
    tmp_path: Path, fault: str, why: str
) -> None:
    _built, driver, left = _failed_run(tmp_path, fault, why)
    result = subprocess.run(
        bisector_argv("cleanup", "--run-dir", str(tmp_path / "run")),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "Traceback" not in result.stderr
    assert driver.calls("teardowns").count(left) == 2, result.stdout
    assert driver.up() == [], result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
