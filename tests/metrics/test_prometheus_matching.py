"""`series_matching`: PromQL's `count({__name__=~"PATTERN"})` over a /metrics page, what a
person does with `curl /metrics | grep -c`: a leak that registers a family per object, under
numbered names no exact family name can name.

The families are the 2017 apiserver's reflector gauges: client-go's reflector named each
reflector `reflector_<file:line>_<N>` (N a process-wide counter, tools/cache/reflector.go
at kubernetes 855c5e0e, `fmt.Sprintf("reflector_"+name+"_%d", reflectorSuffix)`) and
pkg/util/reflector/prometheus registered a gauge family per reflector under that name
(`NewLastResourceVersionMetric`: Subsystem name, Name "last_resource_version"), until
kubernetes bca495e2 (1 November 2017) made it one family with a `name` label. The lines
are *constructed* from that code (its HELP text; the numbers are made up).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.collected import metrics_file
from bisector.config import Section
from bisector.errors import CollectError, ConfigError
from bisector.metrics import PrometheusMetric, parse_source_metric
from bisector.metrics.readings import Evidence, read_metric

FACTORY = "k8s_io_kubernetes_pkg_client_informers_informers_generated_internalversion_factory_go_72"


def reflector(n: int, rv: int) -> str:
    name = f"reflector_{FACTORY}_{n}_last_resource_version"
    return (
        f"# HELP {name} last resource version seen for the reflectors\n"
        f"# TYPE {name} gauge\n"
        f"{name} {rv}\n"
    )


def page(reflectors: range, goroutines: int) -> str:
    return (
        "".join(reflector(n, 1000 + n) for n in reflectors)
        + "# HELP reflector_lists_total Total number of API lists done by the reflectors\n"
        "# TYPE reflector_lists_total counter\n"
        f'reflector_lists_total{{name="reflector_{FACTORY}_4520"}} 1\n'
        "# HELP go_goroutines Number of goroutines that currently exist.\n"
        "# TYPE go_goroutines gauge\n"
        f"go_goroutines {goroutines}\n"
        "# TYPE process_start_time_seconds gauge\n"
        "process_start_time_seconds 1.5e+09\n"
    )


def log_dir(tmp_path: Path, before: str, after: str) -> Path:
    d = tmp_path / "logs"
    d.mkdir(exist_ok=True)
    (d / metrics_file("before")).write_text(before)
    (d / metrics_file("after")).write_text(after)
    return d


def metric(**keys: object) -> PrometheusMetric:
    table = Section({"source": "prometheus", **keys}, "c.toml", "metrics.m")
    found = parse_source_metric("m", table, "prometheus")
    assert isinstance(found, PrometheusMetric)
    return found


def test_a_pattern_counts_every_numbered_family_at_the_windows_end(tmp_path: Path) -> None:
    d = log_dir(tmp_path, page(range(4520, 4522), 300), page(range(4520, 4545), 420))
    leak = metric(series_matching="reflector_.*_last_resource_version")
    got = read_metric(leak, Evidence.in_log_dir(d))
    assert got.value == 25  # 25 reflectors made by the end, one family each
    assert got.at_start == 2 and got.to_dict()["at_start"] == 2  # what the report draws from
    assert got.where.endswith('{__name__=~"reflector_.*_last_resource_version"}')
    assert leak.describe() == (
        'prometheus count({__name__=~"reflector_.*_last_resource_version"}) at the end'
    )
    # Anchored as PromQL anchors =~: "reflector_" alone matches no whole name.
    with pytest.raises(CollectError, match="absent is not zero"):
        read_metric(metric(series_matching="reflector_"), Evidence.in_log_dir(d))


def test_every_series_of_the_page_is_the_total_an_endpoint_serves(tmp_path: Path) -> None:
    d = log_dir(tmp_path, page(range(4520, 4522), 300), page(range(4520, 4545), 420))
    # 25 gauges, reflector_lists_total, go_goroutines, process_start_time_seconds.
    assert read_metric(metric(series_matching=".+"), Evidence.in_log_dir(d)).value == 28


def test_labels_select_among_the_matched_series(tmp_path: Path) -> None:
    d = log_dir(tmp_path, page(range(1), 1), page(range(3), 2))
    lists = metric(series_matching="reflector_.*", labels={"name": f"reflector_{FACTORY}_4520"})
    assert read_metric(lists, Evidence.in_log_dir(d)).value == 1
    assert lists.describe().startswith('prometheus count({__name__=~"reflector_.*",name="refl')


def test_nothing_matching_is_no_value_unless_declared_zero(tmp_path: Path) -> None:
    d = log_dir(tmp_path, page(range(0), 1), page(range(0), 2))
    with pytest.raises(CollectError, match=r'matches \{__name__=~"reflector_.*_last_resource'):
        read_metric(metric(series_matching="reflector_.*_last_resource_version"),
                    Evidence.in_log_dir(d))  # fmt: skip
    zero = metric(series_matching="reflector_.*_last_resource_version", absent="zero")
    assert read_metric(zero, Evidence.in_log_dir(d)).value == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [("reflector_(", "is not a regular expression"), ("", "write a name pattern")],
)
def test_a_bad_pattern_is_one_config_line(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        metric(series_matching=value)
    assert "\n" not in str(caught.value) and "c.toml" in str(caught.value)


def test_a_gauge_and_a_counter_say_where_they_started(tmp_path: Path) -> None:
    d = log_dir(tmp_path, page(range(4520, 4522), 300), page(range(4520, 4545), 420))
    goroutines = read_metric(metric(gauge="go_goroutines"), Evidence.in_log_dir(d))
    assert (goroutines.at_start, goroutines.value) == (300, 420)
    lists = read_metric(metric(counter="reflector_lists_total"), Evidence.in_log_dir(d))
    assert lists.at_start == 0.0  # an increase starts at 0
