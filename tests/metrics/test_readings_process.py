"""The process source reads processes.json (bisector/collected.py's contract)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.collected import ProcessUsage, write_processes
from bisector.errors import CollectError
from bisector.metric_registry import MetricRegistry
from bisector.metrics import ProcessMetric
from bisector.metrics.readings import Evidence, read_metric


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


def _entry(name: str, cpu: float, rss: float, start: float = 1000.0, end: float = 1300.0) -> str:
    return (
        f'{{"name": "{name}", "cpu_s": {cpu}, "peak_rss_bytes": {rss}, '
        f'"start": {start}, "end": {end}}}'
    )


@pytest.mark.parametrize(
    ("entries", "metric", "why"),
    [
        # Two entries for one name (a file appended to across launches, or two processes
        # measured apart): the last one (1 s of CPU) read as good where the first had 100.
        (
            [_entry("kube-apiserver", 100, 1 << 30), _entry("kube-apiserver", 1, 1 << 30)],
            "apiserver_cpu_s",
            "twice",
        ),
        # procs_cluster.usage() gives start == end and 0 CPU when it had no sample of the
        # process at the warmup's start: 0 s of CPU over 0 s is no measurement (read good).
        ([_entry("kube-apiserver", 0, 1 << 30, 1300.0, 1300.0)], "apiserver_cpu_s", "0s"),
        # VmHWM unreadable reads 0 (procs_cluster.peak_rss_bytes): no live process has no RSS.
        ([_entry("kube-apiserver", 5, 0)], "apiserver_peak_rss_mib", "no peak RSS"),
        # More than any address space: garbled (read as bad, ~1e294 MiB).
        ([_entry("kube-apiserver", 5, 1e300)], "apiserver_peak_rss_mib", "cannot be read"),
    ],
)
def test_impossible_process_entries_are_no_value(
    tmp_path: Path, entries: list[str], metric: str, why: str
) -> None:
    (tmp_path / "processes.json").write_text('{"processes": [' + ", ".join(entries) + "]}")
    source = MetricRegistry().source_metric(metric)
    assert source is not None
    with pytest.raises(CollectError, match=why):
        read_metric(source, Evidence.in_log_dir(tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,  # json.loads raises RecursionError (not a ValueError)
        '{"processes": [' + _entry("kube-apiserver", int("1" + "0" * 400), 1) + "]}",  # Overflow
    ],
    ids=["nested", "huge-int"],
)
def test_a_processes_file_json_cannot_hold_is_no_value(tmp_path: Path, text: str) -> None:
    # Both raised past read_processes: `score DIR` exited 129, "a bug in bisector".
    (tmp_path / "processes.json").write_text(text)
    with pytest.raises(CollectError, match="cannot be read"):
        read_metric(ProcessMetric("c", "kube-apiserver", "cpu_s"), Evidence.in_log_dir(tmp_path))
