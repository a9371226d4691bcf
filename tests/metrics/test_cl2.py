"""The cl2 source, on report dirs written from the perf-tests schemas (tests/helpers/evidence.py
names the files and commit: perftype.go, simple_test_executor.go, scheduling_throughput.go)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisector.errors import CollectError
from bisector.metric_registry import MetricRegistry
from bisector.metrics import Cl2Metric
from bisector.metrics.readings import Evidence, read_metric
from tests.helpers.evidence import summary_name, write_cl2_report

REGISTRY = MetricRegistry()


def _builtin(name: str) -> Cl2Metric:
    metric = REGISTRY.source_metric(name)
    assert isinstance(metric, Cl2Metric)
    return metric


def test_the_builtins_read_their_summaries(tmp_path: Path) -> None:
    report = write_cl2_report(
        tmp_path / "cl2", patch_node_status_p99_ms=61.5, pod_startup_p99_ms=3120.0, throughput=88.0
    )
    evidence = Evidence(cl2_dir=report)
    patch = read_metric(_builtin("apiserver_patch_node_status_p99_ms"), evidence)
    # The _simple summary (half the latency) shares the measurement's name: the prefix
    # "APIResponsivenessPrometheus_load_" leaves it out.
    assert patch.value == 61.5 and patch.source == "cl2"
    assert "APIResponsivenessPrometheus_load_2026-08-07T16:16:53Z.json" in patch.where
    assert read_metric(_builtin("pod_startup_p99_ms"), evidence).value == 3120.0
    assert read_metric(_builtin("scheduling_throughput"), evidence).value == 88.0
    assert REGISTRY.worse("scheduling_throughput") == "lower"
    assert REGISTRY.worse("pod_startup_p99_ms") == "higher"


def test_an_evaluations_cl2_dir_is_its_log_dirs(tmp_path: Path) -> None:
    write_cl2_report(tmp_path / "cl2", patch_node_status_p99_ms=7.0)
    metric = _builtin("apiserver_patch_node_status_p99_ms")
    assert read_metric(metric, Evidence.in_log_dir(tmp_path)).value == 7.0
    assert read_metric(metric, Evidence.in_dir(tmp_path)).value == 7.0  # score DIR
    assert read_metric(metric, Evidence.in_dir(tmp_path / "cl2")).value == 7.0  # score ARTIFACTS


def _one(tmp_path: Path, doc: object, metric: Cl2Metric) -> float:
    tmp_path.mkdir(parents=True, exist_ok=True)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (tmp_path / summary_name("Custom")).write_text(text)
    return read_metric(metric, Evidence(cl2_dir=tmp_path)).value


ITEM = {"data": {"Perc99": 5.0}, "unit": "ms", "labels": {"Metric": "a"}}


@pytest.mark.parametrize(
    ("doc", "labels", "why"),
    [
        ('{"version": "v1", "dataItems": [', (), "not JSON"),
        ("[]", (), "not a JSON object"),
        ({"dataItems": {}}, (), "dataItems is not a list"),
        ({"dataItems": [ITEM]}, (("Metric", "b"),), "no data item with labels"),
        ({"dataItems": [ITEM, ITEM]}, (("Metric", "a"),), "2 data items"),
        ({"dataItems": [{**ITEM, "data": {"Perc99": "NaN"}}]}, (), "not a number"),
        ('{"dataItems": [{"data": {"Perc99": NaN}, "labels": {}}]}', (), "not a number"),
        ({"dataItems": [{**ITEM, "data": {"Perc50": 1}}]}, (), r"keys: Perc50"),
        ({"perc50": 3, "max": 9}, (("Metric", "a"),), "no dataItems"),
        # Go's encoding/json never writes a key twice: a file that does was edited or
        # spliced, and which value is the measurement is unknown (the last read 5: bad
        # for a throughput, good for a latency).
        ('{"dataItems": [{"data": {"Perc99": 900, "Perc99": 5}, "labels": {}}]}', (), "twice"),
        # No latency, count or throughput is negative: -5 read as bad for a throughput.
        ({"dataItems": [{**ITEM, "data": {"Perc99": -5.0}}]}, (), "negative"),
        # An integer past any float: math.isfinite raised OverflowError (`score` exit 129).
        ('{"dataItems": [{"data": {"Perc99": 1' + "0" * 400 + '}, "labels": {}}]}', (), "number"),
    ],
)
def test_garbled_summaries_give_no_value(
    tmp_path: Path, doc: object, labels: tuple[tuple[str, str], ...], why: str
) -> None:
    with pytest.raises(CollectError, match=why):
        _one(tmp_path, doc, Cl2Metric("m", "Custom_", "Perc99", labels))


def test_no_summary_or_two_of_them_give_no_value(tmp_path: Path) -> None:
    metric = Cl2Metric("m", "Custom_", "Perc99")
    with pytest.raises(CollectError, match="no CL2 report directory"):
        read_metric(metric, Evidence(cl2_dir=tmp_path / "absent"))
    tmp_path.mkdir(exist_ok=True)
    with pytest.raises(CollectError, match=r"no CL2 summary Custom_\*"):
        read_metric(metric, Evidence(cl2_dir=tmp_path))
    (tmp_path / "Custom_load_1.json").write_text("{}")
    (tmp_path / "Custom_load_2.json").write_text("{}")
    with pytest.raises(CollectError, match="2 CL2 summaries"):
        read_metric(metric, Evidence(cl2_dir=tmp_path))
