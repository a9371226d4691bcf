"""The run's own bookkeeping is true (issue 20, class 10): what `status` and `runs` say
about a run is what happened to it, `runs --remove-finished` removes only what it lists
as finished, a rerun of a finished command adds no verdicts and claims no work it did
not do, and an interrupted run that tore down says so in its journal, so `cleanup`
does not tear down a second time.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    bisector_argv,
    journal,
    run_args,
    wait_for,
    write_fault_config,
)
from tests.helpers.repo import BuiltRepo, build_repo

VALUES = [2, 2, 2, 40, 40, 40]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return _go(bisector_argv(*args))


def _go(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _run_argv(built: BuiltRepo, driver: FaultDriver, good: int, bad: int) -> list[str]:
    """`bisector run` in the repository's own run directory (listed by `runs`)."""
    return bisector_argv(
        "run", "--repo", str(built.path), "--config", str(driver.config),
        "--good", built.mainline[good], "--bad", built.mainline[bad],
    )  # fmt: skip


def _state(built: BuiltRepo, good: int, bad: int) -> str:
    """The state `bisector status` gives the run of mainline good..bad."""
    out = _cli("status", "--repo", str(built.path)).stdout
    head = f"range {built.mainline[good][:12]}..{built.mainline[bad][:12]}: "
    (line,) = [line for line in out.splitlines() if head in line]
    return line.split(head, 1)[1]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_journals_its_teardown_and_cleanup_does_not_repeat_it(
    tmp_path: Path, driver: FaultDriver, signum: signal.Signals
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    driver.inject("hang-collect", "call:1")
    run_dir = tmp_path / "run"
    argv = run_args(built.path, good, built.mainline[-1], driver, run_dir)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: driver.entered("collect"), what="the first collect")
    process.send_signal(signum)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == RunExit.INTERRUPTED, err
    assert "teardown done" in err
    assert driver.calls("teardowns") == [good] and driver.up() == []
    assert [r["type"] for r in journal(run_dir)][-2:] == ["cleaned", "interrupted"]

    cleanup = _cli("cleanup", "--run-dir", str(run_dir))
    assert cleanup.returncode == 0, cleanup.stderr
    assert "nothing left up" in cleanup.stdout
    assert driver.calls("teardowns") == [good]  # not a second time
    status = _cli("status", "--repo", str(built.path), "--run-dir", str(run_dir)).stdout
    assert ": interrupted" in status and "stopped" not in status


@pytest.mark.slow
def test_status_and_runs_tell_finished_failed_and_killed_runs_apart(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    # A finished run, then a person's mark on it (the journal's last line is the mark).
    done = _go(_run_argv(built, driver, 0, 5))
    assert done.returncode == RunExit.FOUND, done.stderr
    marked = _cli("mark", built.mainline[1], "good", "--repo", str(built.path))
    assert marked.returncode == 0, marked.stderr
    assert _state(built, 0, 5).startswith("finished")
    # A run whose endpoints do not separate: exit 2.
    failed = _go(_run_argv(built, driver, 3, 5))
    assert failed.returncode == RunExit.USAGE, failed.stderr
    assert _state(built, 3, 5).startswith("failed: the bad endpoint does not score worse")
    # A run killed -9 in its first launch (another backend config: nothing cached).
    other = write_fault_config(tmp_path / "other")
    other.inject("hang-launch", "all")
    killed = subprocess.Popen(
        _run_argv(built, other, 1, 5), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: other.entered("launch"), what="the launch")
    finally:
        killed.kill()
        killed.wait()
        other.kill_leftovers()
    assert _state(built, 1, 5).startswith("stopped (killed?)")
    listed = _cli("runs", "--repo", str(built.path)).stdout
    assert listed.count(": finished") == 1 and listed.count(": stopped") == 1

    removed = _cli("runs", "--repo", str(built.path), "--remove-finished")
    assert removed.returncode == 0, removed.stderr
    # Only the finished run without a mark waiting to be used would go; this one has one.
    assert "removed" not in removed.stdout
    again = _go(_run_argv(built, driver, 0, 5))
    assert again.returncode == RunExit.FOUND, again.stderr
    assert _state(built, 0, 5) == "finished"
    removed = _cli("runs", "--repo", str(built.path), "--remove-finished")
    assert removed.stdout.count("removed ") == 1, removed.stdout
    left = _cli("status", "--repo", str(built.path)).stdout
    assert ": failed" in left and ": stopped (killed?)" in left and ": finished" not in left


@pytest.mark.slow
def test_a_rerun_of_a_finished_run_adds_no_verdict_and_claims_no_work(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    first = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert first.returncode == RunExit.FOUND, first.stderr
    verdicts = [r for r in journal(run_dir) if r["type"] == "verdict"]
    status = _cli("status", "--repo", str(built.path), "--run-dir", str(run_dir)).stdout
    launches = driver.calls("launches")

    again = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert again.returncode == RunExit.FOUND, again.stderr
    assert driver.calls("launches") == launches  # nothing measured
    assert [r for r in journal(run_dir) if r["type"] == "verdict"] == verdicts
    after = _cli("status", "--repo", str(built.path), "--run-dir", str(run_dir)).stdout
    # The same state, measurements and verdicts; only the disk line may move (the reports
    # are written again).
    assert _no_disk(after) == _no_disk(status)
    (cost,) = [line for line in again.stdout.splitlines() if "cost, measured" in line]
    assert "none measured now" in cost, cost
    (first_cost,) = [line for line in first.stdout.splitlines() if "cost, measured" in line]
    assert "now" not in first_cost


@pytest.mark.slow
def test_a_run_stopped_by_an_error_with_a_cluster_left_up_exits_6(
    tmp_path: Path, driver: FaultDriver
) -> None:
    # The good endpoint's teardown fails: its measurement is a skip, so the run stops
    # ("could not be measured", bad input: 2), while its cluster may still be up (6).
    built = build_repo(tmp_path / "repo", VALUES)
    driver.inject("fail-teardown", "call:1")
    run_dir = tmp_path / "run"
    result = _go(run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir))
    assert result.returncode == RunExit.LEFT_UP, result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("bisector: error:")]
    assert "could not be measured" in line
    assert f"clusters may still be running: bisector cleanup --run-dir {run_dir}" in line
    status = _cli("status", "--repo", str(built.path), "--run-dir", str(run_dir)).stdout
    assert status.count("failed: ") == 1


@pytest.mark.slow
def test_runs_keeps_a_finished_run_whose_teardown_failed_until_cleanup(
    tmp_path: Path, driver: FaultDriver
) -> None:
    # Finished (exit 6), but a cluster may still be up: its journal is what `cleanup`
    # tears it down from.
    built = build_repo(tmp_path / "repo", VALUES)
    driver.inject("fail-teardown", "call:3")
    done = _go(_run_argv(built, driver, 0, 5))
    assert done.returncode == RunExit.LEFT_UP, done.stderr
    assert _state(built, 0, 5) == "finished"
    removed = _cli("runs", "--repo", str(built.path), "--remove-finished")
    assert removed.returncode == 0 and "removed" not in removed.stdout
    (run_dir,) = (built.path / ".git" / "bisector" / "runs").iterdir()
    refused = _cli("runs", "--repo", str(built.path), "--remove", str(run_dir))
    assert refused.returncode == 2 and f"bisector cleanup --run-dir {run_dir}" in refused.stderr
    assert run_dir.is_dir()
    assert _cli("cleanup", "--run-dir", str(run_dir)).returncode == 0  # torn down now
    removed = _cli("runs", "--repo", str(built.path), "--remove", str(run_dir))
    assert removed.returncode == 0 and not run_dir.exists()


def _no_disk(status: str) -> list[str]:
    return [line for line in status.splitlines() if not line.strip().startswith("disk:")]
