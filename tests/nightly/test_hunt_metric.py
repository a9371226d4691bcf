"""A hunt whose backend cannot measure the job's metric is not started (nightly/hunt.py
`unmeasurable`): a cl2 metric needs a backend that hands over a CL2 report."""

from __future__ import annotations

from typing import Any

import pytest

from bisector.config import Section
from bisector.nightly.hunt import unmeasurable
from bisector.settings import RunFlags, RunSettings


def _settings(metric: str, backend: str, **backend_keys: Any) -> RunSettings:
    tables = {"run": {"backend": backend}, "backends": {backend: backend_keys}}
    return RunSettings.from_config(
        Section(tables, "nightly.toml", "nightly.jobs[0]"),
        good="HEAD",
        bad="HEAD",
        flags=RunFlags(metric=metric),
    )


@pytest.mark.parametrize("backend", ["sim", "gce", "procs", "kind", "local"])
def test_a_log_metric_is_measured_by_every_backend(backend: str) -> None:
    assert unmeasurable(_settings("conflicts", backend)) is None


def test_a_cl2_metric_needs_a_workload_on_kind() -> None:
    why = unmeasurable(_settings("scheduling_throughput", "kind"))
    assert why is not None
    assert why.startswith("scheduling_throughput is a cl2 metric and [backends.kind] sets no ")
    assert "workload that runs ClusterLoader2" in why
    assert unmeasurable(_settings("scheduling_throughput", "kind", workload="cl2.sh")) is None


@pytest.mark.parametrize("backend", ["sim", "gce", "procs"])
def test_a_cl2_metric_is_refused_on_backends_without_cl2(backend: str) -> None:
    why = unmeasurable(_settings("apiserver_patch_node_status_p99_ms", backend))
    assert why is not None and f"the {backend} backend runs no ClusterLoader2 workload" in why


def test_a_cl2_metric_on_local_goes_ahead() -> None:
    assert unmeasurable(_settings("pod_startup_p99_ms", "local", launch="x", collect="y")) is None
