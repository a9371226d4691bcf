"""`bisector nightly` on today's CL2 job (issue 21): 30 builds of
ci-kubernetes-e2e-gce-scale-performance-100 in gs://kubernetes-ci-logs/logs/<job>/<build>/,
their metric read from the CL2 summaries in artifacts/ (tests/helpers/cl2_history.py,
through the real GCS emulator), run through the CLI entry as cron runs it (a process of its own).

The steps are planted: PATCH nodes/status p99 45 -> 140 ms at build 18 (one noisy 95 ms
build at 5, build 9 without a summary), scheduling throughput 100 -> 40 pods/s at build 20
(lower is worse) or, in another bucket, 40 -> 100 (an improvement: never a regression).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bisector.exitcodes import NightlyExit
from bisector.nightly.store import NightlyStore
from tests.helpers.cl2_history import (
    CL2_JOB,
    NO_SUMMARY_BUILD,
    NOISY_BUILD,
    PATCH_STEP_AT,
    PLANTED_BUILDS,
    THROUGHPUT_STEP_AT,
    Cl2Build,
    local_cl2_tables,
    planted_builds,
    write_cl2_job,
)
from tests.helpers.nightly import run_cli
from tests.helpers.repo import build_repo

BUCKET = "kubernetes-ci-logs"
RISE_BUCKET = "nightly-cl2-rise"  # the same job, its throughput rising at build 20
BUILDS = PLANTED_BUILDS
PATCH_P99 = "apiserver_patch_node_status_p99_ms"


@pytest.fixture(scope="module")
def cl2_job(gcs_client: Any) -> None:
    write_cl2_job(gcs_client, BUCKET, CL2_JOB, BUILDS)
    write_cl2_job(gcs_client, RISE_BUCKET, CL2_JOB, planted_builds(throughput_rises=True))


def _config(tmp_path: Path, metric: str, *, bucket: str = BUCKET, tables: str = "") -> Path:
    config = tmp_path / "nightly.toml"
    config.write_text(
        f'[nightly]\nstate = "{tmp_path / "state"}"\nwindow = 48\n\n'
        f'[[nightly.jobs]]\nname = "scale-100"\njob = "{CL2_JOB}"\nbucket = "{bucket}"\n'
        f'metric = "{metric}"\n' + tables,
        encoding="utf-8",
    )
    return config


def _nightly(config: Path) -> tuple[int, str]:
    """`python -m bisector nightly --config CONFIG` as cron runs it: a process of its own."""
    done = run_cli(config)
    return done.returncode, done.stderr


def _report(tmp_path: Path) -> dict[str, Any]:
    reports = list((tmp_path / "state" / "reports").glob("*/*/nightly.json"))
    assert len(reports) == 1, reports
    data: dict[str, Any] = json.loads(reports[0].read_text())
    return data


def _hunts(tmp_path: Path) -> list[tuple[str, int, int]]:
    store = NightlyStore(tmp_path / "state" / "nightly.db")
    try:
        return [(h.status, h.good_run, h.bad_run) for h in store.hunts()]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.usefixtures("cl2_job")
def test_a_planted_step_in_a_cl2_latency_is_found_in_the_right_range(
    tmp_path: Path,
) -> None:
    code, err = _nightly(_config(tmp_path, PATCH_P99))
    assert code == NightlyExit.REPORTED, err  # no backend: reported, not bisected
    good, bad = BUILDS[PATCH_STEP_AT - 1], BUILDS[PATCH_STEP_AT]
    assert _hunts(tmp_path) == [("unbisected", good.build, bad.build)]
    data = _report(tmp_path)
    assert (data["ci_job"], data["bucket"], data["metric"]) == (CL2_JOB, BUCKET, PATCH_P99)
    assert data["range"]["good_commit"] == good.commit
    assert data["range"]["bad_commit"] == bad.commit
    assert data["higher_is_worse"] is True
    regressions = [c for c in data["change_points"] if c["direction"] == "regression"]
    assert [(c["last_before_run"], c["first_after_run"]) for c in regressions] == [
        (good.build, bad.build)
    ]  # the lone 95 ms build is no step
    # The values are the summaries' Perc99, not anything from the builds' logs.
    by_run = {r["run"]: r for r in data["runs"]}
    assert len(by_run) == 30
    for b in BUILDS:
        if b.index != NO_SUMMARY_BUILD:
            assert by_run[b.build]["value"] == b.patch_node_status_p99_ms
    assert by_run[BUILDS[NOISY_BUILD].build]["value"] == 95.0
    # A build that died before CL2 wrote its report has no value: never good or bad.
    missing = by_run[BUILDS[NO_SUMMARY_BUILD].build]
    assert (missing["value"], missing["status"]) == (None, "no summary")
    assert "30 new run(s) scored" in err

    # The next night: every build is stored, the regression already reported.
    code, err = _nightly(_config(tmp_path, PATCH_P99))
    assert code == NightlyExit.NOTHING, err
    assert "0 new run(s) scored" in err and "already hunted" in err


@pytest.mark.slow
@pytest.mark.usefixtures("cl2_job")
def test_a_drop_of_a_lower_is_worse_metric_is_a_regression(
    tmp_path: Path,
) -> None:
    code, err = _nightly(_config(tmp_path, "scheduling_throughput"))
    assert code == NightlyExit.REPORTED, err
    good, bad = BUILDS[THROUGHPUT_STEP_AT - 1], BUILDS[THROUGHPUT_STEP_AT]
    assert _hunts(tmp_path) == [("unbisected", good.build, bad.build)]
    data = _report(tmp_path)
    assert data["higher_is_worse"] is False
    assert (data["range"]["good_run"], data["range"]["bad_run"]) == (good.build, bad.build)
    assert data["range"]["before"] > 90 and data["range"]["after"] < 50
    assert [c["direction"] for c in data["change_points"]] == ["regression"]
    # The build at the noisy p99 has a throughput of its own: the series is the throughput's.
    assert {r["run"]: r["value"] for r in data["runs"]}[BUILDS[0].build] == BUILDS[0].throughput


@pytest.mark.slow
@pytest.mark.usefixtures("cl2_job")
def test_a_rise_of_a_lower_is_worse_metric_is_not_a_regression(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, "scheduling_throughput", bucket=RISE_BUCKET)
    code, err = _nightly(config)
    assert code == NightlyExit.NOTHING, err
    assert "no regression in scheduling_throughput" in err
    assert _hunts(tmp_path) == []
    assert not (tmp_path / "state" / "reports").exists()
    # The rise was read (40 -> 100 pods/s at build 20), and is an improvement.
    store = NightlyStore(tmp_path / "state" / "nightly.db")
    try:
        values = [r.value for r in store.series("scale-100", "scheduling_throughput")]
    finally:
        store.close()
    assert len(values) == 30 and values[NO_SUMMARY_BUILD] is None
    low = [v for v in values[:THROUGHPUT_STEP_AT] if v is not None]
    high = [v for v in values[THROUGHPUT_STEP_AT:] if v is not None]
    assert max(low) < 50 and min(high) > 90


@pytest.mark.slow
@pytest.mark.usefixtures("cl2_job")
def test_a_hunt_whose_backend_gives_no_cl2_report_is_refused_before_any_launch(
    tmp_path: Path,
) -> None:
    """configs/nightly.toml's gce job (2017 kubemark scripts, no ClusterLoader2) with a cl2
    metric: every evaluation would be a skip at cluster-hours each. The hunt is reported
    unbisected with the reason; nothing is built, launched or measured."""
    repo = tmp_path / "kubernetes"
    repo.mkdir()  # never read: the hunt stops before the bisection
    tables = (
        f'repo = "{repo}"\n[nightly.jobs.run]\nbackend = "gce"\nwarmup = "30m"\n'
        '[nightly.jobs.backends.gce]\nproject = "my-gcp-project"\nzone = "us-central1-b"\n'
    )
    code, err = _nightly(_config(tmp_path, PATCH_P99, tables=tables))
    assert code == NightlyExit.REPORTED, err
    good, bad = BUILDS[PATCH_STEP_AT - 1], BUILDS[PATCH_STEP_AT]
    assert _hunts(tmp_path) == [("unbisected", good.build, bad.build)]
    data = _report(tmp_path)
    assert data["status"] == "unbisected"
    assert data["reason"].startswith(
        f"{PATCH_P99} is a cl2 metric and the gce backend runs no ClusterLoader2 workload"
    )
    assert data["culprit"] is None and data["bisection"]["evaluations"] == []
    assert data["budget"]["used"] == {"evaluations": 0, "cluster_hours": 0}
    assert not (tmp_path / "state" / "hunts").exists()
    assert "unbisected: " + data["reason"] in err
    assert "gcloud" not in err


@pytest.mark.slow
def test_a_cl2_regression_is_bisected_to_its_culprit(gcs_client: Any, tmp_path: Path) -> None:
    """CI builds tested commits of a built history; the throughput dropped between two of
    them. The nightly hunts that range with a local backend whose workload writes a
    SchedulingThroughput summary (100 pods/s for good trees, 40 for bad ones): the metric
    is passed on to the bisection, which measures it itself and names the culprit."""
    built = build_repo(tmp_path / "repo", [0] * 8 + [1] * 8)
    tested = [0, 1, 2, 3, 4, 5, 11, 12, 13, 14, 15]
    builds = [
        Cl2Build(i, built.mainline[c], throughput=(100.0 if c < 8 else 40.0) + (i % 3))
        for i, c in enumerate(tested)
    ]
    bucket = "nightly-cl2-bisect"
    write_cl2_job(gcs_client, bucket, CL2_JOB, builds)
    tables = f'repo = "{built.path}"\n' + local_cl2_tables("nightly.jobs.")
    config = _config(tmp_path, "scheduling_throughput", bucket=bucket, tables=tables)
    code, err = _nightly(config)
    assert code == NightlyExit.FOUND, err
    assert _hunts(tmp_path) == [("found", builds[5].build, builds[6].build)]
    data = _report(tmp_path)
    assert data["culprit"]["commit"] == built.mainline[8] and data["culprit"]["confirmed"]
    report = json.loads(next((tmp_path / "state" / "hunts").rglob("report.json")).read_text())
    assert report["metric"] == "scheduling_throughput"
    assert report["threshold"]["worse"] == "lower" and 40 < report["threshold"]["value"] < 100
