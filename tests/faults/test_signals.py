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

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from bisector.signals import TERMINATING
from tests.helpers.faults import (
    FaultDriver,
    bisector_argv,
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


# -- every termination signal, every phase, two slots (issue 20, class 5) ---------------

PHASES_2 = [*PHASES, "confirmation", "report"]
CONFIRMATION_LAUNCHES = "calls:5-6"  # --parallel 2 over VALUES: endpoints, midpoints, confirm


def _hold_both(driver: FaultDriver, phase: str, good: str, bad: str) -> None:
    if phase == "teardown":
        driver.inject("slow-teardown", good, bad)
    elif phase == "confirmation":
        driver.inject("hang-launch", CONFIRMATION_LAUNCHES)
    elif phase not in ("warmup", "report"):
        driver.inject(f"hang-{phase}", good, bad)


def _both_in(driver: FaultDriver, phase: str, run_dir: Path, good: str, bad: str) -> bool:
    events = set(driver.events())
    if phase == "warmup":
        return all(("end", "launch", c) in events for c in (good, bad))
    if phase == "teardown":
        return _tearing_down(driver) == {good, bad}
    if phase == "confirmation":
        return len(driver.calls("launches")) == 6 and driver.entered("launch")
    if phase == "report":
        return (run_dir / "report.json").exists()
    return all(("start", phase, c) in events for c in (good, bad)) and driver.entered(phase)


class _BlackHole:
    """A GCS endpoint that accepts connections and never answers: the run's upload (after
    the report is written) waits there, 60 s per request, long enough to be signalled."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))  # never accept()ed: the kernel
        self.host = f"http://127.0.0.1:{self.socket.getsockname()[1]}"  # completes handshakes


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES_2)
def test_sighup_in_every_phase_with_two_slots_tears_both_down(tmp_path: Path, phase: str) -> None:
    """SIGHUP (a closed terminal, an ssh drop) had the default action: bisector died at
    once and both clusters of `--parallel 2` stayed up. It is an interrupt like Ctrl-C."""
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[0], built.mainline[-1]
    run: dict[str, object] = {"warmup": "3s"} if phase == "warmup" else {}
    hole = _BlackHole() if phase == "report" else None
    if hole is not None:
        run["upload"] = "gs://bisector-black-hole/run"
    driver = write_fault_config(tmp_path, run=run)
    env = {**os.environ, **({"STORAGE_EMULATOR_HOST": hole.host} if hole else {})}
    try:
        _hold_both(driver, phase, good, bad)
        run_dir = tmp_path / "run"
        argv = [*run_args(built.path, good, bad, driver, run_dir), "--parallel", "2"]
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        wait_for(lambda: _both_in(driver, phase, run_dir, good, bad), what=phase)
        if phase == "report":
            time.sleep(0.5)  # the report is written; the upload waits for the black hole
        process.send_signal(signal.SIGHUP)
        _out, err = process.communicate(timeout=60)

        assert process.returncode == RunExit.INTERRUPTED, err
        assert "Traceback" not in err
        assert "Resume with: bisector run" in err
        assert driver.live_steps() == []
        assert driver.up() == []
        launched = {c for edge, step, c in driver.events() if step == "launch"}
        torn_down = {c for edge, step, c in driver.events() if (edge, step) == ("end", "teardown")}
        assert launched <= torn_down
        if phase in ("confirmation", "report"):
            assert measured_twice(run_dir) == {}
    finally:
        driver.kill_leftovers()
        if hole is not None:
            hole.socket.close()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [*SIGNALS, pytest.param(signal.SIGHUP, id="SIGHUP")])
def test_a_storm_of_signals_during_the_teardowns_lets_them_finish_and_exits_130(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Signals every 20 ms from the first teardown until bisector exits, with two slots:
    the second and later ones are reported, never obeyed. Before, one landing after the
    run restored the default handler ended it with 143 (SIGTERM) or 129 (SIGHUP), and
    one landing between two cleanup steps aborted the rest of them."""
    built = build_repo(tmp_path / "repo", VALUES)
    good, bad = built.mainline[0], built.mainline[-1]
    driver = write_fault_config(tmp_path)
    try:
        driver.inject("slow-teardown", good, bad)
        run_dir = tmp_path / "run"
        argv = [*run_args(built.path, good, bad, driver, run_dir), "--parallel", "2"]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: bool(_tearing_down(driver)), what="a teardown")
        sent = 0
        while process.poll() is None and sent < 1000:  # 20 s at most
            process.send_signal(signum)
            sent += 1
            time.sleep(0.02)
        _out, err = process.communicate(timeout=60)

        assert process.returncode == RunExit.INTERRUPTED, (sent, err)
        assert "Traceback" not in err
        assert f"{signum.name} received again" in err
        assert {("end", "teardown", good), ("end", "teardown", bad)} <= set(driver.events())
        assert driver.up() == []
        assert driver.live_steps() == []
        assert not (built.path / ".git" / "worktrees").exists() or not any(
            (built.path / ".git" / "worktrees").iterdir()
        ), "the run's own worktrees were left behind: its cleanup was cut short"
    finally:
        driver.kill_leftovers()


OTHER_SIGNALS = [s for s in TERMINATING if s not in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]


@pytest.mark.slow
@pytest.mark.parametrize("signum", OTHER_SIGNALS, ids=[s.name for s in OTHER_SIGNALS])
def test_every_other_termination_signal_tears_down_too(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """SIGQUIT (Ctrl-\\), SIGUSR1/2, SIGALRM, SIGXCPU (a CPU limit), ...: each one's default
    action ends the process on the spot, leaving the cluster up."""
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    driver = write_fault_config(tmp_path)
    driver.inject("hang-launch", "call:1")
    argv = run_args(built.path, good, built.mainline[-1], driver, tmp_path / "run")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: driver.entered("launch"), what="the launch")
        process.send_signal(signum)
        _out, err = process.communicate(timeout=60)
        assert process.returncode == RunExit.INTERRUPTED, err
        assert "Traceback" not in err
        assert driver.up() == []
        assert driver.live_steps() == []
    finally:
        if process.poll() is None:  # a run that did not end: not left to the next test
            process.kill()
            process.communicate()
        driver.kill_leftovers()


@pytest.mark.slow
def test_under_nohup_sighup_is_ignored_and_sigpipe_never_stops_a_run(tmp_path: Path) -> None:
    """`nohup bisector run ...`: the user asked the run to outlive the terminal, so a
    SIGHUP ignored at start stays ignored (the run goes on to its culprit); a SIGPIPE
    sent by hand is ignored as Python ignores it (a closed output is handled as a write
    that failed, tests/faults/test_output.py)."""
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    driver = write_fault_config(tmp_path, run={"warmup": "2s"})
    try:
        argv = ["nohup", *run_args(built.path, good, built.mainline[-1], driver, tmp_path / "run")]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: ("end", "launch", good) in driver.events(), what="the first warmup")
        process.send_signal(signal.SIGHUP)
        process.send_signal(signal.SIGPIPE)
        out, err = process.communicate(timeout=120)
        assert process.returncode == RunExit.FOUND, err
        assert f"culprit: {built.mainline[CULPRIT]}" in out
        assert driver.up() == []
    finally:
        driver.kill_leftovers()


@pytest.mark.slow
def test_a_signal_held_during_a_teardown_that_fails_still_stops_the_run(tmp_path: Path) -> None:
    """SIGTERM during a teardown that then fails: the failure is said (TEARDOWN FAILED,
    the cleanup command), and the run stops. Before, the held signal was dropped with the
    teardown's error, and the run went on launching the next clusters."""
    built = build_repo(tmp_path / "repo", VALUES)
    good = built.mainline[0]
    driver = write_fault_config(tmp_path)
    try:
        driver.inject("slow-teardown", "call:1")
        driver.inject("fail-teardown", "call:1")
        run_dir = tmp_path / "run"
        argv = run_args(built.path, good, built.mainline[-1], driver, run_dir)
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: driver.entered("teardown"), what="the teardown")
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)

        assert process.returncode in (RunExit.INTERRUPTED, RunExit.LEFT_UP), err
        assert "Traceback" not in err
        assert "SIGTERM received during the teardown" in err
        assert f"TEARDOWN FAILED for {good[:12]}" in err
        assert driver.calls("launches") == [good]  # nothing launched after the signal
        assert measurements(run_dir) == []
        driver.clear("fail-teardown")
        cleanup = subprocess.run(
            bisector_argv("cleanup", "--run-dir", str(run_dir)),
            capture_output=True,
            text=True,
            check=False,
        )
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        assert driver.up() == []
    finally:
        driver.kill_leftovers()
