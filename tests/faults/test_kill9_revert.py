"""kill -9 during the revert check and during the next culprit's hunt, then the same
command again: the reverted candidates are the same commits (made the same way every
time), so the rerun finds their journaled runs, measures nothing twice, tears down what
the kill left up first, and names both culprits.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from bisector.gitrepo import GitRepo
from tests.helpers.faults import (
    FaultDriver,
    measurements,
    report,
    run_args,
    wait_for,
    write_fault_config,
)
from tests.helpers.repo import BuiltRepo, build_repo

VALUE = [2, 2, 2, 2, 2, 2, 32, 32, 32, 32]
SECOND = [0, 0, 0, 200, 200, 200, 200, 200, 200, 200]


def _setup(tmp_path: Path, name: str) -> tuple[BuiltRepo, FaultDriver, list[str]]:
    built = build_repo(tmp_path / name / "repo", VALUE, second=SECOND)
    driver = write_fault_config(tmp_path / name / "cfg", run={"threshold": 20.0})
    argv = run_args(
        built.path, built.mainline[0], built.mainline[-1], driver, tmp_path / name / "run"
    )
    return built, driver, argv


def _twice(run_dir: Path) -> dict[tuple[str, str, tuple[str, ...]], int]:
    """A commit measured again as the same tree in the same phase: repeated work."""
    seen = Counter(
        (m["commit"], m["phase"], tuple(m.get("reverted", []))) for m in measurements(run_dir)
    )
    return {key: n for key, n in seen.items() if n > 1}


def _kill_when_collecting(driver: FaultDriver, argv: list[str], selector: str) -> None:
    driver.inject("hang-collect", selector)
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: driver.entered("collect"), what="the held collect")
    finally:
        process.kill()
        process.wait()
    driver.clear("hang-collect")


def _rerun_finds_both(built: BuiltRepo, driver: FaultDriver, argv: list[str], run: Path) -> None:
    assert driver.up() != []  # SIGKILL: the held cluster is still up
    again = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert "Traceback" not in again.stderr
    assert again.returncode == RunExit.FOUND, again.stdout + again.stderr
    assert "left up by a killed run" in again.stderr
    culprits = [c["commit"] for c in report(run)["culprits"]]
    assert culprits == [built.mainline[3], built.mainline[6]]
    assert driver.up() == []
    assert _twice(run) == {}


@pytest.mark.slow
def test_kill_9_during_the_revert_check_then_rerun(tmp_path: Path) -> None:
    built, driver, argv = _setup(tmp_path, "a")
    # The reverted bad endpoint is the same commit in every process that makes it.
    reverted = GitRepo(built.path).revert_onto(built.mainline[-1], [built.mainline[3]])
    assert reverted.commit is not None
    try:
        _kill_when_collecting(driver, argv, reverted.commit)
        run = tmp_path / "a" / "run"
        before = {m["id"] for m in measurements(run)}
        _rerun_finds_both(built, driver, argv, run)
        revert_runs = [m for m in measurements(run) if m["phase"] == "revert"]
        # One revert check per culprit, the first measured by the rerun (the killed
        # one's measurement never reached the journal).
        assert revert_runs[0]["built"] == reverted.commit
        assert len(revert_runs) == 2 and not {m["id"] for m in revert_runs[:1]} & before
    finally:
        driver.kill_leftovers()


@pytest.mark.slow
def test_kill_9_during_the_second_hunt_then_rerun(tmp_path: Path) -> None:
    # A reference run says which collect is the second hunt's first measurement.
    ref, ref_driver, ref_argv = _setup(tmp_path, "ref")
    done = subprocess.run(ref_argv, capture_output=True, text=True, check=False)
    assert done.returncode == RunExit.FOUND, done.stderr
    ref_runs = measurements(tmp_path / "ref" / "run")
    first_of_hunt_2 = next(
        i for i, m in enumerate(ref_runs) if m["reverted"] and m["phase"] == "bisect"
    )
    built, driver, argv = _setup(tmp_path, "b")
    assert built.mainline == ref.mainline  # the same history, hash for hash
    try:
        _kill_when_collecting(driver, argv, f"call:{first_of_hunt_2 + 1}")
        run = tmp_path / "b" / "run"
        assert any(m["phase"] == "revert" for m in measurements(run))  # killed after it
        _rerun_finds_both(built, driver, argv, run)
        # The revert check was not measured again.
        assert len([m for m in measurements(run) if m["phase"] == "revert"]) == 2
    finally:
        driver.kill_leftovers()
        ref_driver.kill_leftovers()
