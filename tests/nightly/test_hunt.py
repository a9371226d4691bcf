"""End to end: an emulator CI history regressing at a demo repository commit, the sim backend.

The nightly runs as a real subprocess (`python -m bisector nightly`), against the
GCS emulator, a real git repository and the built-in simulator.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from bisector.measure.journal import read_lines
from bisector.sim.demo_repo import create_demo_repo
from tests.helpers.ci_history import write_job_history
from tests.helpers.nightly import cli_env, demo_ci_runs, nightly_argv, nightly_config, run_cli

pytestmark = pytest.mark.slow


def measurements(run_dir: Path) -> list[dict[str, Any]]:
    return [
        r["measurement"]
        for r in read_lines(run_dir / "journal.jsonl")
        if r.get("type") == "measurement"
    ]


def test_first_nightly_names_the_culprit_and_the_second_does_nothing(
    gcs_client: Any, tmp_path: Path
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    runs, good, bad = demo_ci_runs(demo)
    bucket, job = "nightly-found", "ci-kubernetes-kubemark-5000"
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = nightly_config(
        tmp_path / "nightly.toml",
        bucket=bucket,
        job=job,
        repo=demo.path,
        state=state,
        upload=f"gs://{bucket}/bisector-reports",
    )

    first = run_cli(config, timeout=240)

    assert first.returncode == 3, first.stderr
    report_dir = state / "reports" / job / f"{good[:12]}-{bad[:12]}"
    data = json.loads((report_dir / "nightly.json").read_text())
    assert data["status"] == "found"
    assert data["culprit"]["commit"] == demo.culprit
    assert data["range"]["good_commit"] == good
    assert data["range"]["bad_commit"] == bad
    assert data["bisection"]["evaluations"], "the evidence lists the evaluations"
    assert data["budget"]["used"]["evaluations"] == len(data["bisection"]["evaluations"])
    html = (report_dir / "nightly.html").read_text()
    assert "<svg" in html and demo.culprit[:12] in html
    assert demo.culprit in (report_dir / "nightly.md").read_text()
    assert (report_dir / "bisection.json").is_file()
    uploaded = {b.name for b in gcs_client.list_blobs(bucket, prefix="bisector-reports/")}
    prefix = f"bisector-reports/{job}/{report_dir.name}/"
    assert {prefix + n for n in ("nightly.json", "nightly.md", "nightly.html")} <= uploaded
    with sqlite3.connect(state / "nightly.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        hunts = db.execute("SELECT status, culprit, good_run, bad_run FROM hunts").fetchall()
        stored = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    db.close()
    run_of = {r.commit: r.run for r in runs}
    assert hunts == [("found", demo.culprit, run_of[good], run_of[bad])]
    assert stored == len(runs)
    run_dir = next((state / "hunts").iterdir())
    measured = len(measurements(run_dir))

    second = run_cli(config, timeout=120)

    assert second.returncode == 0, second.stderr
    assert "already hunted" in second.stderr
    assert len(measurements(run_dir)) == measured


def wait_for_first_measurement(state: Path, proc: subprocess.Popen[str], timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hunts = state / "hunts"
        for run_dir in hunts.iterdir() if hunts.is_dir() else []:
            if measurements(run_dir):
                return run_dir
        if proc.poll() is not None:
            raise AssertionError(f"nightly ended early ({proc.returncode}): {proc.stderr}")
        time.sleep(0.05)
    raise AssertionError("no measurement journaled in time")


def test_a_hunt_killed_mid_way_resumes_and_a_second_process_is_refused(
    gcs_client: Any, tmp_path: Path
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    runs, _good, _bad = demo_ci_runs(demo)
    bucket, job = "nightly-killed", "ci-kubernetes-kubemark-5000"
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = nightly_config(
        tmp_path / "nightly.toml", bucket=bucket, job=job, repo=demo.path, state=state
    )
    first = subprocess.Popen(
        nightly_argv(config),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
    )
    try:
        run_dir = wait_for_first_measurement(state, first, timeout=120)
        concurrent = run_cli(config, timeout=60)
        assert first.poll() is None, "the first nightly must still hold the lock"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert concurrent.returncode == 5
    assert "another bisector nightly is running" in concurrent.stderr
    assert len(concurrent.stderr.strip().splitlines()) == 1
    before = measurements(run_dir)
    assert before

    resumed = run_cli(config, timeout=240)

    assert resumed.returncode == 3, resumed.stderr
    assert "resuming the hunt" in resumed.stderr
    after = measurements(run_dir)
    assert [m["id"] for m in after[: len(before)]] == [m["id"] for m in before]
    measured = [(m["commit"], m["phase"]) for m in after]
    assert len(measured) == len(set(measured)), "no finished measurement was repeated"
    data = json.loads(next((state / "reports" / job).glob("*/nightly.json")).read_text())
    assert data["culprit"]["commit"] == demo.culprit
    assert data["status"] == "found"
