"""A counter in neither /metrics snapshot is no value, not 0 (issue 30, item 9).

A commit that adds a counter reads N; the commits before it print nothing. Reading
their nothing as 0 lets the range's good endpoint "read" 0 and confirms the commit
that added the metric. Absent is not zero, unless the metric declares it (`absent =
"zero"`): kube-apiserver's apiserver_terminated_watchers_total is a CounterVec
(kubernetes staging/src/k8s.io/apiserver/pkg/storage/cacher/metrics: incremented with
WithLabelValues(group, resource) when a watcher is terminated), and client_golang
prints no family for a vector without a child: a run that terminated no watcher is
the good case and prints nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.config import Section
from bisector.errors import CollectError, ConfigError
from bisector.metrics import PrometheusMetric, parse_source_metric
from bisector.metrics.definitions import BUILTIN_SOURCE_METRICS
from bisector.metrics.readings import Evidence, read_metric
from tests.helpers.evidence import counter, snapshot, write_snapshots

ADDED = "apiserver_watch_cache_events_dispatched_total"  # a counter the range's commit adds
OTHER = counter("apiserver_request_total", [({"verb": "GET"}, 5)])
NEITHER = (snapshot(OTHER), snapshot(counter("apiserver_request_total", [({"verb": "GET"}, 9)])))


def _metric(absent: str = "skip") -> PrometheusMetric:
    labels = (("resource", "nodes"),)
    return PrometheusMetric("dispatched", "counter", (ADDED,), labels, absent=absent)


def test_a_counter_in_neither_snapshot_is_no_value_naming_the_series(tmp_path: Path) -> None:
    write_snapshots(tmp_path, *NEITHER)
    with pytest.raises(CollectError) as info:
        read_metric(_metric(), Evidence.in_log_dir(tmp_path))
    said = str(info.value)
    assert f'{ADDED}{{resource="nodes"}} is in neither snapshot' in said
    assert 'absent = "zero"' in said  # what to do, when absence does mean none


def test_a_counter_declared_absent_zero_reads_zero_when_in_neither(tmp_path: Path) -> None:
    write_snapshots(tmp_path, *NEITHER)
    assert read_metric(_metric("zero"), Evidence.in_log_dir(tmp_path)).value == 0.0


def test_a_counter_present_in_both_is_read_whatever_absent_says(tmp_path: Path) -> None:
    before = snapshot(counter(ADDED, [({"resource": "nodes"}, 3)]))
    after = snapshot(counter(ADDED, [({"resource": "nodes"}, 3)]), OTHER)
    write_snapshots(tmp_path, before, after)
    assert read_metric(_metric(), Evidence.in_log_dir(tmp_path)).value == 0.0  # no increase


def test_absent_is_declared_in_the_metrics_table() -> None:
    table = {"source": "prometheus", "counter": ADDED, "labels": {"resource": "nodes"}}
    parsed = parse_source_metric("d", Section(table, "f.toml", "metrics.d"), "prometheus")
    assert isinstance(parsed, PrometheusMetric) and parsed.absent == "skip"
    zero = Section({**table, "absent": "zero"}, "f.toml", "metrics.d")
    parsed = parse_source_metric("d", zero, "prometheus")
    assert isinstance(parsed, PrometheusMetric) and parsed.absent == "zero"
    histogram = {"source": "prometheus", "histogram": ADDED, "quantile": 0.9}
    for bad in ({**table, "absent": "0"}, {**histogram, "absent": "zero"}):
        with pytest.raises(ConfigError, match="absent"):
            parse_source_metric("d", Section(bad, "f.toml", "metrics.d"), "prometheus")


def test_the_builtin_terminated_watchers_declares_its_absence_zero() -> None:
    (builtin,) = [m for m in BUILTIN_SOURCE_METRICS if m.name == "terminated_watchers"]
    assert isinstance(builtin, PrometheusMetric) and builtin.absent == "zero"
