"""The process source reads processes.json (bisector/backends/collected.py's contract)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.collected import ProcessUsage, write_processes
from bisector.errors import CollectError
from bisector.metric_registry import MetricRegistry
from bisector.metrics import ProcessMetric
from bisector.metrics.evidence import Evidence, read_metric


def _usage(name: str, cpu: float, rss: int) -> ProcessUsage:
    return ProcessUsage(name, cpu, rss, 1000.0, 1300.0)


def test_cpu_seconds_and_peak_rss_of_a_named_process(tmp_path: Path) -> None:
    write_processes(tmp_path, [_usage("kube-apiserver", 212.5, 3 << 29), _usage("etcd", 40.0, 1)])
    registry = MetricRegistry()
    evidence = Evidence.in_log_dir(tmp_path)
    cpu = registry.source_metric("apiserver_cpu_s")
    rss = registry.source_metric("apiserver_peak_rss_mib")
    assert cpu is not None and rss is not None
    reading = read_metric(cpu, evidence)
    assert reading.value == 212.5 and reading.source == "process" and "300s" in reading.where
    assert read_metric(rss, evidence).value == 1536.0
    etcd = ProcessMetric("e", "etcd", "peak_rss_bytes")
    assert read_metric(etcd, evidence).value == 1.0


def test_a_missing_process_file_or_process_is_no_value(tmp_path: Path) -> None:
    metric = ProcessMetric("c", "kube-apiserver", "cpu_s")
    with pytest.raises(CollectError, match="no process measurements"):
        read_metric(metric, Evidence.in_log_dir(tmp_path))
    write_processes(tmp_path, [_usage("etcd", 1.0, 1)])
    with pytest.raises(CollectError, match=r"no process 'kube-apiserver' .*it has: etcd"):
        read_metric(metric, Evidence.in_log_dir(tmp_path))
    (tmp_path / "processes.json").write_text('{"processes": [{"name": "kube-apiserver"')
    with pytest.raises(CollectError, match="cannot be read"):
        read_metric(metric, Evidence.in_log_dir(tmp_path))
