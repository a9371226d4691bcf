"""Early good verdicts through `bisector run`, with a `local` backend that can `peek`:
the safety net, and a run stopped in the search it starts (kill -9, SIGINT, SIGTERM).

Two regressions: mainline 2-4 show only after 8 of 10 minutes (the first bad, the
culprit), 5-7 from minute 1 (the bad endpoint's onset: minute 3). The first search
passes a late commit as good early, lands on mainline 5, whose parent measures bad at
full length: the early good verdicts are withdrawn (journaled) and the search runs
again. The run is stopped in a phase of that second search's first evaluation (faults
strike once the journal holds the withdrawal; tests/faults/test_kill9.py and
test_signals.py cover every phase of an evaluation, here what matters is the state
after the withdrawal); the same command then finishes:
the true culprit, confirmed, no early good verdict counted after the withdrawal, no
full-length measurement repeated, nothing left up.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import (
    FaultDriver,
    bisector_argv,
    journal,
    report,
    run_args,
    wait_for,
)
from tests.helpers.repo import BuiltRepo, build_repo
from tests.helpers.shaped_local import BAD, LATE, write_shaped_config

VALUES = [20] * 2 + [LATE] * 3 + [BAD] * 3
CULPRIT = 2
KILL = "SIGKILL"


def _setup(tmp_path: Path) -> tuple[BuiltRepo, FaultDriver, list[str], Path]:
    built = build_repo(tmp_path / "repo", VALUES)
    driver = write_shaped_config(tmp_path, warmup_s=0.3)
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    return built, driver, argv, run_dir


def _after_withdrawal(run_dir: Path) -> list[dict[str, Any]]:
    records = journal(run_dir)
    at = next(i for i, r in enumerate(records) if r["type"] == "early_good_withdrawn")
    return [r["measurement"] for r in records[at:] if r["type"] == "measurement"]


def _check_finished(built: BuiltRepo, driver: FaultDriver, run_dir: Path, out: str) -> None:
    assert f"culprit: {built.mainline[CULPRIT]}" in out
    saved = report(run_dir)
    assert saved["culprit"]["commit"] == built.mainline[CULPRIT]
    assert saved["culprit"]["confirmed"] is True
    records = journal(run_dir)
    assert sum(r["type"] == "early_good_withdrawn" for r in records) >= 1
    later = _after_withdrawal(run_dir)
    assert later and all(m["early_verdict"] != "good" for m in later)
    # The wrong early goods stay in the report, as what happened, saying why they ended.
    early_goods = [e for e in saved["evaluations"] if "on course for" in (e["stopped_early"] or "")]
    assert early_goods and all(built.value(e["commit"]) == LATE for e in early_goods)
    # No full-length measurement was made twice (an early good one may be made again).
    done = Counter(
        (m["commit"], m["phase"])
        for r in records
        if r["type"] == "measurement"
        for m in [r["measurement"]]
        if m["value"] is not None and m["early_verdict"] != "good"
    )
    assert [k for k, n in done.items() if n > 1] == []
    assert driver.up() == [] and driver.live_steps() == []


@pytest.mark.slow
def test_the_safety_net_through_bisector_run(tmp_path: Path) -> None:
    built, driver, argv, run_dir = _setup(tmp_path)
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert "Traceback" not in result.stderr
        assert result.returncode == RunExit.FOUND, result.stderr
        assert "searching again without early good verdicts" in result.stderr
        _check_finished(built, driver, run_dir, result.stdout)
        # `bisector status` on the finished run; `bisector mark` then a rerun changes
        # nothing found (a mark on a commit measured at full length as bad agrees).
        status = subprocess.run(
            bisector_argv("status", "--repo", str(built.path), "--run-dir", str(run_dir)),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in status.stdout
        assert "early good verdicts withdrawn: the culprit's parent" in status.stdout
    finally:
        driver.kill_leftovers()


def _hold(driver: FaultDriver, phase: str) -> str:
    """Make the second search's first `phase` hang; the step whose start says it is held."""
    fault = "peek-hang" if phase == "peek" else f"hang-{phase}"
    driver.inject(fault, "withdrawn")
    return fault


@pytest.mark.slow
@pytest.mark.parametrize(
    ("phase", "how"),
    [
        ("collect", KILL),
        ("teardown", KILL),
        ("peek", "SIGINT"),  # a peek that hangs, interrupted
        ("launch", "SIGTERM"),
    ],
)
def test_a_run_stopped_in_the_second_search_resumes_to_the_right_culprit(
    tmp_path: Path, phase: str, how: str
) -> None:
    built, driver, argv, run_dir = _setup(tmp_path)
    try:
        fault = _hold(driver, phase)
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: driver.entered(phase), timeout=120, what=f"{phase} held")
            if how == KILL:
                process.kill()
            else:
                process.send_signal(signal.Signals[how])
            _out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if how != KILL:
            assert process.returncode == RunExit.INTERRUPTED, err
            assert "Traceback" not in err
            assert driver.up() == [] and driver.live_steps() == []
        assert any(r["type"] == "early_good_withdrawn" for r in journal(run_dir))
        driver.clear(fault)
        driver.kill_leftovers()  # a SIGKILLed run's step in flight (the rerun tears down)
        again = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert "Traceback" not in again.stderr
        assert again.returncode == RunExit.FOUND, again.stderr
        # The resumed run starts with early good verdicts off: the journal withdrew them.
        assert "early good verdicts off: a full-length run contradicted one" in again.stderr
        assert "searching again" not in again.stderr
        _check_finished(built, driver, run_dir, again.stdout)
        assert json.loads((run_dir / "report.json").read_text())["status"] == "found"
    finally:
        driver.kill_leftovers()
