"""One registry for every source: `[metrics.NAME] source = ...` tables, checked once."""

from __future__ import annotations

import pytest

from bisector.config import Section
from bisector.errors import ConfigError
from bisector.metric_registry import MetricRegistry
from bisector.metrics import Cl2Metric, ProcessMetric, PrometheusMetric
from bisector.metrics.scoring import SourceScorer


def _registry(metrics: dict[str, object]) -> MetricRegistry:
    return MetricRegistry.from_config(Section({"metrics": metrics}, "cfg.toml"))


def test_every_source_is_declared_in_one_table() -> None:
    registry = _registry(
        {
            "pod_conflicts": {"verb": "PATCH", "path": "/pods/", "statuses": [409]},
            "binds": {"source": "log", "path": "/bindings"},
            "list_pods_p99_ms": {
                "source": "cl2",
                "summary": "APIResponsivenessPrometheus_load_",
                "labels": {"Verb": "LIST", "Resource": "pods", "Scope": "cluster"},
                "key": "Perc99",
            },
            "etcd_p99_ms": {
                "source": "prometheus",
                "histogram": ["etcd_request_duration_seconds"],
                "labels": {"operation": "update", "type": "/registry/minions"},
                "quantile": 0.99,
                "unit": "ms",
            },
            "etcd_rss": {"source": "process", "process": "etcd", "value": "peak_rss_mib"},
            "pods_per_s": {"source": "cl2", "summary": "S_", "key": "max", "worse": "lower"},
        }
    )
    assert set(registry.definitions) == {"pod_conflicts", "binds"}
    assert isinstance(registry.source_metric("list_pods_p99_ms"), Cl2Metric)
    etcd = registry.source_metric("etcd_p99_ms")
    assert isinstance(etcd, PrometheusMetric) and etcd.unit == "ms" and etcd.quantile == 0.99
    assert isinstance(registry.source_metric("etcd_rss"), ProcessMetric)
    names = ("conflicts", "binds", "etcd_rss", "terminated_watchers")
    assert [registry.source_of(n) for n in names] == ["log", "log", "process", "prometheus"]
    assert registry.worse("pods_per_s") == "lower" and registry.worse("conflicts") == "higher"
    assert registry.watchable("conflicts") and registry.watchable("binds")
    assert not registry.watchable("conflicts_per_min")  # a rate can fall
    assert not registry.watchable("terminated_watchers")  # no look at the log shows it
    assert isinstance(registry.scorer("etcd_p99_ms"), SourceScorer)
    assert not isinstance(registry.scorer("binds"), SourceScorer)
    for name in ("apiserver_patch_node_status_p99_ms", "pod_startup_p99_ms",
                 "scheduling_throughput", "terminated_watchers", "apiserver_cpu_s",
                 "watch_dispatch_p99_ms", "patch_nodes_p99_ms"):  # fmt: skip
        assert registry.check(name, "--metric") == name


@pytest.mark.parametrize(
    ("table", "why"),
    [
        ({"source": "graphite"}, "expected one of log, cl2, prometheus, process"),
        (
            {"source": "cl2", "summary": "A_", "key": "Perc99", "lables": {}},
            "lables` is not a known",
        ),
        ({"source": "cl2", "key": "Perc99"}, "summary` is missing"),
        ({"source": "prometheus", "labels": {}}, "one of counter, histogram, summary, gauge"),
        ({"source": "prometheus", "counter": "a", "histogram": "b"}, "exactly one of"),
        ({"source": "prometheus", "histogram": "a"}, "needs a quantile between 0 and 1"),
        ({"source": "prometheus", "histogram": "a", "quantile": 99}, "between 0 and 1"),
        ({"source": "prometheus", "counter": "a", "quantile": 0.5}, "a counter has no quantile"),
        ({"source": "prometheus", "histogram": "a", "quantile": 0.5, "unit": "h"}, "s, ms, us"),
        ({"source": "process", "process": "etcd", "value": "rss"}, "cpu_s, peak_rss_bytes"),
        ({"source": "process"}, "process` is missing"),
        ({"source": "process", "process": "etcd", "worse": "up"}, '"higher" or "lower"'),
        ({"source": "log", "path": "/x", "summary": "y"}, "summary` is not a known"),
        (
            {"source": "cl2", "summary": "A_", "key": "k", "labels": {"Verb": 1}},
            "expected a string",
        ),
    ],
)
def test_mistakes_are_one_line_naming_file_and_key(table: dict[str, object], why: str) -> None:
    with pytest.raises(ConfigError, match=why) as caught:
        _registry({"m": table})
    assert str(caught.value).startswith("cfg.toml")


@pytest.mark.parametrize("name", ["conflicts", "scheduling_throughput", "apiserver_cpu_s"])
def test_a_builtin_cannot_be_redefined(name: str) -> None:
    with pytest.raises(ConfigError, match="redefines a built-in"):
        _registry({name: {"source": "process", "process": "etcd"}})
