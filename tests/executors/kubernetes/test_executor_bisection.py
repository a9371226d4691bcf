"""A whole bisection with `[run] executor = "kubernetes"`, 2 Jobs at a time, on the
recorded-answers stand-in (tests.helpers.kube_replay): each Job's pod runs `bisector
evaluate` for real here (tests.helpers.kube_pod) and hands its results back through a
bucket (the gcp-storage-emulator). The search, journal, confirmation and report are the
local run's: the same culprit, confirmed, each evaluation's pod named, nothing left."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from bisector.backends.resources import ResourceRecord
from bisector.bisection.pipeline import run_bisection
from bisector.executors.kubernetes.api import KubeApi
from bisector.sim.demo_repo import create_demo_repo
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.gcs import ensure_bucket
from tests.helpers.kube_executor import demo_settings, kubernetes_table
from tests.helpers.kube_pod import run_pod
from tests.helpers.kube_replay import FakeCluster

pytestmark = pytest.mark.slow


def test_a_bisection_over_jobs_names_the_planted_commit(
    tmp_path: Path, gcs_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_bucket(gcs_client, "bisector-results")
    demo = create_demo_repo(tmp_path / "repo", prs=12)  # 5,000 nodes: logs need the bucket
    cluster = FakeCluster(["complete"], speed=40.0, pod_runner=lambda job: run_pod(job, tmp_path))
    monkeypatch.setattr(KubeApi, "of", classmethod(lambda cls, cfg: cluster.kube_api()))
    table = kubernetes_table(demo, cluster.namespace, artifacts="gs://bisector-results/runs")
    settings = demo_settings(demo, table, parallel=2, run_dir=tmp_path / "run")
    assert settings.search.parallel == 2
    report = run_bisection(settings, progress=PlainProgress(io.StringIO()))

    assert report.culprit is not None and report.culprit.commit == demo.culprit
    assert report.confirmed
    assert len(cluster.created) == len(report.evaluations)
    assert all(e.ran_on.startswith(f"Job {cluster.namespace}/") for e in report.evaluations)
    assert sorted(cluster.deleted) == sorted((name, "Foreground") for name in cluster.created)
    assert ResourceRecord(tmp_path / "run").load() == []
    # Every result was read and its object deleted: nothing of the run is left in the bucket.
    assert list(gcs_client.list_blobs("bisector-results", prefix="runs/")) == []
