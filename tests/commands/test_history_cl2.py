"""`bisector history` on today's CL2 job: builds in gs://kubernetes-ci-logs/logs/<job>/<build>/
(pod-utils metadata, prowjob.json, CL2 summaries in artifacts/: tests/helpers/cl2_history.py),
through the real GCS emulator."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bisector.entry import main
from tests.helpers.cl2_history import (
    CL2_JOB,
    PATCH_STEP_AT,
    PLANTED_BUILDS,
    Cl2Build,
    local_cl2_tables,
    write_cl2_job,
)
from tests.helpers.repo import build_repo

BUCKET = "kubernetes-ci-logs"
BUILDS = PLANTED_BUILDS
STEP_AT = PATCH_STEP_AT


@pytest.fixture(scope="module")
def cl2_job(gcs_client: Any) -> None:
    write_cl2_job(gcs_client, BUCKET, CL2_JOB, BUILDS)


def _history(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    argv = ["history", "--job", CL2_JOB, "--cache-dir", str(tmp_path / "cache")]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, *args])
    out, _ = capsys.readouterr()
    return int(exit_info.value.code or 0), out


@pytest.mark.slow
@pytest.mark.usefixtures("cl2_job")
def test_a_planted_step_in_30_builds_names_the_range_around_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = _history(capsys, tmp_path, "--metric", "apiserver_patch_node_status_p99_ms")
    assert code == 0, out
    good, bad = BUILDS[STEP_AT - 1], BUILDS[STEP_AT]
    assert f"last good: run {good.build}, commit {good.commit}" in out
    assert f"first bad: run {bad.build}, commit {bad.commit}" in out
    assert f"bisector run --good {good.commit} --bad {bad.commit} --metric " in out
    rows = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d{19})  (.*)$", out, re.M)}
    assert len(rows) == 30
    assert "no summary" in rows[BUILDS[9].build]  # never shown as good
    assert "95" in rows[BUILDS[5].build]  # the lone noisy build is not the step
    code, out = _history(
        capsys, tmp_path, "--metric", "apiserver_patch_node_status_p99_ms", "--json"
    )
    doc = json.loads(out)
    assert doc["range"] == {"good": good.commit, "bad": bad.commit,
                            "good_run": good.build, "bad_run": bad.build}  # fmt: skip
    first = doc["runs"][0]["metrics"]
    assert first["apiserver_patch_node_status_p99_ms"] == BUILDS[0].patch_node_status_p99_ms
    assert first["sources"]["apiserver_patch_node_status_p99_ms"]["source"] == "cl2"


@pytest.mark.usefixtures("cl2_job")
def test_a_lower_is_worse_metric_steps_down(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = _history(capsys, tmp_path, "--metric", "scheduling_throughput")
    assert code == 0, out
    assert (
        f"last good: run {BUILDS[19].build}" in out and f"first bad: run {BUILDS[20].build}" in out
    )
    # A threshold in the metric's own units: at or below 60 pods/s is bad.
    code, out = _history(capsys, tmp_path, "--metric", "scheduling_throughput", "--threshold", "60")
    assert f"first bad: run {BUILDS[20].build}" in out and "threshold 60" in out


@pytest.mark.usefixtures("cl2_job")
def test_metrics_ci_does_not_keep_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["history", "--job", CL2_JOB, "--metric", "apiserver_cpu_s"])
    assert exit_info.value.code == 2
    assert "CI builds keep apiserver logs and CL2 summaries only" in capsys.readouterr().err


@pytest.mark.slow
def test_a_lower_is_worse_metric_bisects_to_its_culprit(
    gcs_client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """history --bisect on scheduling_throughput: CI builds tested commits of a built
    history; the range around the drop is bisected with the local backend, whose workload
    writes a SchedulingThroughput summary (100 pods/s for good trees, 40 for bad ones)."""
    built = build_repo(tmp_path / "repo", [0] * 8 + [1] * 8)
    tested = [0, 1, 2, 3, 4, 5, 11, 12, 13, 14, 15]
    job = "ci-kubernetes-e2e-gce-scale-performance-5000"
    builds = [
        Cl2Build(i, built.mainline[c], throughput=(100.0 if c < 8 else 40.0) + (i % 3))
        for i, c in enumerate(tested)
    ]
    write_cl2_job(gcs_client, BUCKET, job, builds)
    config = tmp_path / "bisector.toml"
    config.write_text(local_cl2_tables())
    argv = ["history", "--job", job, "--metric", "scheduling_throughput", "--bisect"]
    argv += ["--config", str(config), "--repo", str(built.path), "--no-cache"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, out + err
    assert f"last good: run {builds[5].build}, commit {built.mainline[5]}" in out
    assert built.mainline[8][:12] in out + err
    report = json.loads(next(built.path.rglob("report.json")).read_text())
    assert report["culprit"]["commit"] == built.mainline[8] and report["culprit"]["confirmed"]
    assert report["threshold"]["worse"] == "lower" and 40 < report["threshold"]["value"] < 100
