"""Infrastructure skips are never final (issue 20, class 7): a launch outage, a log that
could not be collected, a full disk are history, not an answer about the commit. The
message says "rerun the same command"; the rerun measures those commits again instead of
replaying the skip. A commit that does not build is about its tree: it is not rebuilt.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import FaultDriver, measurements, run_args
from tests.helpers.repo import BuiltRepo, build_repo

CULPRIT = 3
VALUES = [2] * CULPRIT + [40] * (8 - CULPRIT)


def _run(built: BuiltRepo, driver: FaultDriver, run_dir: Path) -> subprocess.CompletedProcess[str]:
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_a_launch_outage_at_an_endpoint_is_measured_again_by_the_rerun(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    bad = built.mainline[-1]
    driver.inject("flaky", bad)  # every launch of the bad endpoint fails: quota, an outage
    run_dir = tmp_path / "run"
    first = _run(built, driver, run_dir)
    assert first.returncode == RunExit.USAGE, first.stderr
    assert "could not be measured" in first.stderr and "rerun the same command" in first.stderr
    assert driver.calls("launches").count(bad) == 3

    driver.clear("flaky")  # the outage is over
    again = _run(built, driver, run_dir)
    assert again.returncode == RunExit.FOUND, again.stderr
    assert driver.calls("launches").count(bad) == 4  # measured again, not replayed
    assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout
    assert "are measured again: an infrastructure skip is not final" in again.stderr
    assert driver.up() == []


@pytest.mark.slow
def test_a_full_disk_at_the_culprit_is_measured_again_by_the_rerun(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    culprit = built.mainline[CULPRIT]
    driver.inject("nospace-build", culprit)
    run_dir = tmp_path / "run"
    first = _run(built, driver, run_dir)
    assert first.returncode == RunExit.INCONCLUSIVE, first.stderr
    assert "No space left on device" in first.stdout

    driver.clear("nospace-build")  # space freed
    again = _run(built, driver, run_dir)
    assert again.returncode == RunExit.FOUND, again.stderr
    assert f"culprit: {culprit}" in again.stdout
    assert driver.calls("built").count(culprit) >= 2
    values = [m["value"] for m in measurements(run_dir) if m["commit"] == culprit]
    assert values[0] is None and 40.0 in values[1:]


@pytest.mark.slow
def test_a_commit_that_does_not_build_is_not_built_again_by_the_rerun(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES, broken={CULPRIT})
    broken = built.mainline[CULPRIT]
    run_dir = tmp_path / "run"
    first = _run(built, driver, run_dir)
    assert first.returncode == RunExit.INCONCLUSIVE, first.stderr
    builds = driver.calls("built").count(broken)
    assert builds >= 1
    again = _run(built, driver, run_dir)
    assert again.returncode == RunExit.INCONCLUSIVE, again.stderr
    assert driver.calls("built").count(broken) == builds  # the tree's own failure: final


@pytest.mark.slow
def test_a_commit_that_never_launches_is_not_launched_in_every_resume(
    tmp_path: Path, driver: FaultDriver
) -> None:
    """Issue 30: a candidate whose every launch failed cost a build and `launch_attempts`
    launches again in each resume, forever. Two sessions in which it failed to launch (in
    the first, others launched beside it) are the tree's answer for this run: a skip, kept."""
    built = build_repo(tmp_path / "repo", VALUES)
    culprit = built.mainline[CULPRIT]
    driver.inject("flaky", culprit)  # its apiserver never comes up (it exits at start)
    run_dir = tmp_path / "run"
    launches = []
    for _ in range(3):
        done = _run(built, driver, run_dir)
        assert done.returncode == RunExit.INCONCLUSIVE, done.stderr
        launches.append(driver.calls("launches").count(culprit))
    assert launches == [3, 6, 6]  # tried in the first two sessions, then kept
    assert "failed every launch in 2 earlier sessions, beside others that launched" in done.stderr
    assert culprit[:12] in done.stderr
    cached = (built.path / ".git" / "bisector" / "measurements.jsonl").read_text()
    assert culprit not in cached  # still never cached: another run tries it again
    assert driver.up() == []
    # Kept, it is no longer a skip the same command measures again: the report does not
    # send the user round that loop, it asks for a person.
    report = json.loads((run_dir / "report.json").read_text())
    assert not any(e["infra_skip"] for e in report["evaluations"] if e["commit"] == culprit)
    assert "run the same command again: it measures" not in done.stdout
    assert f"measure {culprit[:12]} yourself" in done.stdout


@pytest.mark.slow
def test_a_launch_outage_of_every_commit_is_not_kept(tmp_path: Path, driver: FaultDriver) -> None:
    """Sessions in which nothing else launched either say nothing about the tree: an
    outage of the machine (ports, a quota) is retried by every resume, as before."""
    built = build_repo(tmp_path / "repo", VALUES)
    driver.inject("flaky")  # every launch of every commit fails
    run_dir = tmp_path / "run"
    for _ in range(2):
        _run(built, driver, run_dir)
    driver.clear("flaky")
    again = _run(built, driver, run_dir)
    assert again.returncode == RunExit.FOUND, again.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in again.stdout
    assert "kept as skips" not in again.stderr
