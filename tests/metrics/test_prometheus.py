"""The prometheus source: counter increase and histogram quantile over two snapshots,
checked against numbers computed by hand (the quantile as Prometheus' promql/quantile.go
BucketQuantile computes it: prometheus/prometheus, linear interpolation in the bucket)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bisector.errors import CollectError
from bisector.metrics import PrometheusMetric
from bisector.metrics.prometheus import Bucket, bucket_quantile, parse_snapshot
from bisector.metrics.readings import Evidence, read_metric
from tests.helpers.evidence import counter, histogram, snapshot, summary, write_snapshots

DURATION = "apiserver_request_duration_seconds"
PATCH_STATUS = {"verb": "PATCH", "group": "", "resource": "nodes", "subresource": "status"}
PATCH_NODE = {"verb": "PATCH", "group": "", "resource": "nodes", "subresource": ""}
BOUNDS = ("0.05", "0.1", "0.2", "0.5", "1", "+Inf")


def _buckets(*counts: float) -> dict[str, float]:
    return dict(zip(BOUNDS, counts, strict=True))


# Two series of PATCH nodes whose sums are, before: 10 20 30 40 40 40 and after:
# 20 60 120 138 140 140, so over the window: 10 40 90 98 100 100 (le 0.05 .. +Inf).
BEFORE = snapshot(
    histogram(
        DURATION,
        [
            (PATCH_STATUS, _buckets(6, 12, 18, 24, 24, 24)),
            (PATCH_NODE, _buckets(4, 8, 12, 16, 16, 16)),
        ],
    ),
    counter(
        "apiserver_terminated_watchers_total",
        [
            ({"group": "", "resource": "nodes", "reason": "unresponsive"}, 3),
            ({"group": "", "resource": "pods", "reason": "unresponsive"}, 5),
        ],
    ),
)
AFTER = snapshot(
    histogram(
        DURATION,
        [
            (PATCH_STATUS, _buckets(12, 40, 80, 92, 93, 93)),
            (PATCH_NODE, _buckets(8, 20, 40, 46, 47, 47)),
            ({**PATCH_NODE, "verb": "GET"}, _buckets(500, 500, 500, 500, 500, 500)),
        ],
    ),
    counter(
        "apiserver_terminated_watchers_total",
        [
            ({"group": "", "resource": "nodes", "reason": "unresponsive"}, 10),
            ({"group": "", "resource": "nodes", "reason": "stalled_client"}, 4),  # new series
            ({"group": "", "resource": "pods", "reason": "unresponsive"}, 9),
        ],
    ),
)


def _read(
    tmp_path: Path, metric: PrometheusMetric, before: str = BEFORE, after: str = AFTER
) -> float:
    write_snapshots(tmp_path, before, after)
    return read_metric(metric, Evidence.in_log_dir(tmp_path)).value


def _quantile(
    q: float, unit: str | None = "ms", families: tuple[str, ...] = (DURATION,)
) -> PrometheusMetric:
    labels = (("resource", "nodes"), ("verb", "PATCH"))
    return PrometheusMetric("p", "histogram", families, labels, q, unit)


def test_histogram_quantile_over_the_window_as_computed_by_hand(tmp_path: Path) -> None:
    # Window counts 10 40 90 98 100 100. p99: rank 99 falls in (0.5, 1] holding 2 (98..100),
    # 1 into it: 0.5 + 0.5 * 1/2 = 0.75 s. p50: rank 50 in (0.1, 0.2] holding 50 (40..90),
    # 10 into it: 0.1 + 0.1 * 10/50 = 0.12 s. The GET series and the before counts are left out.
    assert _read(tmp_path, _quantile(0.99)) == pytest.approx(750.0)
    assert _read(tmp_path, _quantile(0.5)) == pytest.approx(120.0)
    assert _read(tmp_path, _quantile(0.99, unit=None)) == pytest.approx(0.75)


def test_counter_increase_sums_the_selected_series_whatever_labels_they_grew(
    tmp_path: Path,
) -> None:
    # nodes: 3 -> 10 (+7) and a series born in the window (+4); pods are not selected: 11.
    for labels in ((("resource", "nodes"),), (("group", ""), ("resource", "nodes"))):
        metric = PrometheusMetric("w", "counter", ("apiserver_terminated_watchers_total",), labels)
        assert _read(tmp_path, metric) == 11.0


def test_label_sets_of_every_generation_are_selected_alike(tmp_path: Path) -> None:
    """{resource} (2017-style), {group,resource}, {group,resource,reason}: one selector."""
    metric = PrometheusMetric("w", "counter", ("watchers_total",), (("resource", "nodes"),))
    for labels in ({"resource": "nodes"}, {"group": "", "resource": "nodes"},
                   {"group": "", "resource": "nodes", "reason": "unresponsive"}):  # fmt: skip
        before = snapshot(counter("watchers_total", [(labels, 2)]))
        after = snapshot(counter("watchers_total", [(labels, 7)]))
        assert _read(tmp_path, metric, before, after) == 5.0
    # A selector label the series lacks reads as "" (PromQL): {group=""} selects 2017 series.
    grouped = PrometheusMetric("w", "counter", ("watchers_total",), (("group", ""),))
    before = snapshot(counter("watchers_total", [({"resource": "nodes"}, 1)]))
    after = snapshot(counter("watchers_total", [({"resource": "nodes"}, 4)]))
    assert _read(tmp_path, grouped, before, after) == 3.0


def test_2017_microsecond_histogram_is_read_in_ms_from_its_help_text(tmp_path: Path) -> None:
    """kubernetes 7043372 staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go:
    apiserver_request_latencies, ExponentialBuckets(125000, 2, 7), labels verb/resource/
    subresource, "Response latency distribution in microseconds ..."; the newer family name
    is tried first and is absent."""
    name = "apiserver_request_latencies"
    help_text = "Response latency distribution in microseconds for each verb, resource and client."
    bounds = ("125000", "250000", "500000", "1e+06", "2e+06", "4e+06", "8e+06", "+Inf")
    labels = {"resource": "nodes", "subresource": "status", "verb": "PATCH"}
    zero = dict.fromkeys(bounds, 0.0)
    after = dict(zip(bounds, (50, 80, 96, 100, 100, 100, 100, 100), strict=True))
    before_text = snapshot(histogram(name, [(labels, zero)], help_text))
    after_text = snapshot(histogram(name, [(labels, after)], help_text))
    # p99: rank 99 in (500000, 1e6] holding 4, 3 into it: 500000 + 500000 * 3/4 us = 875 ms.
    metric = _quantile(0.99, families=(DURATION, name))
    assert _read(tmp_path, metric, before_text, after_text) == pytest.approx(875.0)


def test_2017_summary_quantile_is_the_apiservers_own(tmp_path: Path) -> None:
    name = "apiserver_request_latencies_summary"
    labels = {"resource": "nodes", "subresource": "status", "verb": "PATCH"}
    help_text = "Response latency summary in microseconds for each verb and resource."
    quantiles = {"0.5": 40000, "0.9": 90000, "0.99": 250000}
    text = snapshot(summary(name, [(labels, quantiles)], help_text))
    metric = PrometheusMetric("s", "summary", (name,), (("verb", "PATCH"),), 0.99, "ms")
    assert _read(tmp_path, metric, text, text) == pytest.approx(250.0)


def test_bucket_quantile_edge_cases_follow_prometheus() -> None:
    inf = math.inf
    assert math.isnan(bucket_quantile(0.5, [Bucket(1, 0), Bucket(inf, 0)]))  # no observations
    assert math.isnan(bucket_quantile(0.5, [Bucket(1, 3), Bucket(2, 3)]))  # no +Inf bucket
    assert math.isnan(bucket_quantile(0.5, [Bucket(inf, 3)]))  # one bucket
    assert bucket_quantile(1.0, [Bucket(1, 2), Bucket(2, 3), Bucket(inf, 4)]) == 2  # in +Inf
    assert bucket_quantile(0.5, [Bucket(-1, 3), Bucket(inf, 4)]) == -1  # lowest bound <= 0
    # Non-monotonic counts are forced up: (1: 4, 2: 3) reads as (1: 4, 2: 4).
    assert bucket_quantile(0.5, [Bucket(1, 4), Bucket(2, 3), Bucket(inf, 4)]) == 0.5


@pytest.mark.parametrize(
    ("before", "after", "why"),
    [
        (BEFORE, "", "is empty"),
        (BEFORE, 'apiserver_request_total{code="200" 5\n', "not Prometheus text format"),
        (BEFORE, counter("x_total", [({}, 1)]), "no process_start_time_seconds"),
        (BEFORE, AFTER.replace("1700000000.00", "1700000500.00"), "restarted between"),
        (AFTER, BEFORE, "went down between the snapshots"),
        (BEFORE, BEFORE + counter("other_total", [({}, 1)]), "no observations in the window"),
        # The same page twice (one file for both, a cache between bisector and the
        # apiserver): a live apiserver's page always moves (its own CPU seconds, memstats),
        # so nothing was measured; its counters' increase of 0 read as good.
        (BEFORE, BEFORE, "identical"),
    ],
)
def test_bad_snapshots_give_no_value(tmp_path: Path, before: str, after: str, why: str) -> None:
    with pytest.raises(CollectError, match=why):
        _read(tmp_path, _quantile(0.99), before, after)


def test_a_missing_snapshot_is_no_value(tmp_path: Path) -> None:
    (tmp_path / "metrics-after.prom").write_text(AFTER)
    with pytest.raises(CollectError, match=r"no metrics snapshot at .*metrics-before\.prom"):
        read_metric(_quantile(0.99), Evidence.in_log_dir(tmp_path))


def test_escaped_label_values_are_unescaped_by_the_parser() -> None:
    text = snapshot(counter("c_total", [({"path": 'a"b\\c'}, 2)]))
    (sample,) = parse_snapshot(text).of("c_total")
    assert sample.labels == {"path": 'a"b\\c'}


def test_a_unit_that_cannot_be_told_is_no_value(tmp_path: Path) -> None:
    text = histogram("queue_depth", [({}, {"1": 1, "+Inf": 2})])
    metric = PrometheusMetric("q", "histogram", ("queue_depth",), (), 0.5, "ms")
    with pytest.raises(CollectError, match="cannot tell the unit"):
        _read(tmp_path, metric, snapshot(), snapshot(text))


def _counter_metric() -> PrometheusMetric:
    return PrometheusMetric(
        "w", "counter", ("apiserver_terminated_watchers_total",), (("resource", "nodes"),)
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # A `metrics` command that appends (`>>`, a retry loop) leaves two pages in one file:
        # the later page first here, so its counters read 0 over the window (truth: +11).
        (BEFORE, AFTER + BEFORE),
        (BEFORE + AFTER, AFTER),
        # One series printed twice with two values: which one is the reading is unknown.
        (
            BEFORE,
            AFTER
            + counter(
                "apiserver_terminated_watchers_total",
                [({"group": "", "resource": "nodes", "reason": "unresponsive"}, 3)],
            ),
        ),
    ],
)
def test_a_snapshot_holding_a_series_twice_is_no_value(
    tmp_path: Path, before: str, after: str
) -> None:
    # Prometheus refuses such a scrape ("duplicate sample"); last-one-wins read 0 or 1 as good.
    with pytest.raises(CollectError, match="twice"):
        _read(tmp_path, _counter_metric(), before, after)


def test_a_series_gone_from_the_second_snapshot_is_no_value(tmp_path: Path) -> None:
    # The le="1" buckets of the first snapshot are missing from the second (a page cut or
    # edited short): summed without them, the p99's rank (99 of 100) fell past le="0.5"
    # into +Inf, read as the second highest bound: 500 ms where the window's p99 was 750.
    after = "\n".join(line for line in AFTER.splitlines() if 'le="1"' not in line) + "\n"
    with pytest.raises(CollectError, match="missing from"):
        _read(tmp_path, _quantile(0.99), BEFORE, after)
    gone = AFTER.replace('reason="unresponsive"} 10', 'reason="x"} 10')
    with pytest.raises(CollectError, match="missing from"):
        _read(tmp_path, _counter_metric(), BEFORE, gone)


@pytest.mark.parametrize("value", ["+Inf", "-250000", "-Inf"])
def test_a_summary_quantile_that_is_no_latency_is_no_value(tmp_path: Path, value: str) -> None:
    # A summary's quantile is its own estimate of observed values: +Inf read as bad, a
    # negative latency as good (NaN, no observation in its window, already had no value).
    name = "apiserver_request_latencies_summary"
    text = snapshot(summary(name, [({"verb": "PATCH"}, {"0.99": 1.0})]))
    text = text.replace('quantile="0.99"} 1', f'quantile="0.99"}} {value}')
    metric = PrometheusMetric("s", "summary", (name,), (("verb", "PATCH"),), 0.99)
    with pytest.raises(CollectError, match="not an observed value"):
        _read(tmp_path, metric, text, text)


def test_one_page_read_as_both_snapshots_is_no_counter_value(tmp_path: Path) -> None:
    # `score --metrics-before X --metrics-after X`: 0 terminated watchers, good (exit 0).
    with pytest.raises(CollectError, match="identical"):
        _read(tmp_path, _counter_metric(), AFTER, AFTER)
