"""Metrics read from beside the log: `[metrics.NAME]` tables with `source = "cl2" |
"prometheus" | "process"`, and the built-ins of each source.

```toml
[metrics.patch_node_status_p99_ms]
source = "cl2"
summary = "APIResponsivenessPrometheus_load_"   # the summary file's name prefix
labels = { Verb = "PATCH", Resource = "nodes", Subresource = "status", Scope = "resource" }
key = "Perc99"

[metrics.node_watchers_closed]
source = "prometheus"
counter = "apiserver_terminated_watchers_total"  # or histogram = / summary = ; a list: the
labels = { resource = "nodes" }                  # first name the snapshot has is read
absent = "zero"                                  # a counter in neither snapshot: "skip"
                                                 # (default: absent is not zero) or "zero"

[metrics.etcd_watchers]
source = "prometheus"
target = "etcd"                                  # whose /metrics: apiserver (default), etcd
gauge = "etcd_debugging_mvcc_watcher_total"      # or series = "NAME": how many series match

[metrics.patch_nodes_p99_ms]
source = "prometheus"
histogram = ["apiserver_request_duration_seconds", "apiserver_request_latencies"]
labels = { verb = "PATCH", resource = "nodes" }
quantile = 0.99
unit = "ms"                                      # s, ms or us; the family's own unit comes
                                                 # from its name or HELP text
[metrics.apiserver_rss_mib]
source = "process"
process = "kube-apiserver"
value = "peak_rss_mib"                           # cpu_s, peak_rss_bytes or peak_rss_mib
worse = "higher"                                 # every source: "higher" (default) or "lower"
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bisector.config import Section
from bisector.errors import ConfigError
from bisector.metrics.direction import Worse
from bisector.metrics.prometheus import UNIT_SCALE

SOURCES = ("log", "cl2", "prometheus", "process")
PROCESS_VALUES = ("cpu_s", "peak_rss_bytes", "peak_rss_mib")
PROMETHEUS_KINDS = ("counter", "histogram", "summary", "gauge", "series")
QUANTILE_KINDS = ("histogram", "summary")
# Whose /metrics a prometheus metric reads (bisector.collected.metrics_file): the
# procs backend snapshots each control-plane process it runs; other backends the apiserver.
TARGETS = ("apiserver", "etcd", "kube-controller-manager", "kube-scheduler")
ABSENT = ("skip", "zero")  # what a counter, gauge or series with no series means
Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Cl2Metric:
    name: str
    summary: str  # file-name prefix
    key: str  # of the data item's `data` (Perc99), or of the whole object (max)
    labels: Labels = ()
    worse: Worse = "higher"
    source: str = "cl2"

    def describe(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.labels)
        return f"cl2 {self.summary}*" + (f" {{{shown}}}" if shown else "") + f" {self.key}"


@dataclass(frozen=True)
class PrometheusMetric:
    name: str
    kind: str  # counter | histogram | summary
    families: tuple[str, ...]  # tried in order: the first one the snapshot has is read
    labels: Labels = ()
    quantile: float | None = None
    unit: str | None = None  # s | ms | us: the value is converted to it
    worse: Worse = "higher"
    source: str = "prometheus"
    # A counter in neither snapshot (a gauge, a series not in the second): "skip" (absent
    # is not zero: a commit before the one that added the metric prints nothing either)
    # or "zero" (declared: nothing happened).
    absent: str = "skip"
    target: str = "apiserver"  # whose /metrics (TARGETS)

    def describe(self) -> str:
        shown = ",".join(f'{k}="{v}"' for k, v in self.labels)
        what = {
            "counter": "increase",
            "histogram": f"p{_pct(self.quantile)} over the window",
            "gauge": "at the end",
            "series": "series at the end",
        }
        how = what.get(self.kind, f"p{_pct(self.quantile)} (the summary's own)")
        whose = "" if self.target == "apiserver" else f"{self.target} "
        return f"prometheus {whose}{'|'.join(self.families)}{{{shown}}} {how}"


@dataclass(frozen=True)
class ProcessMetric:
    name: str
    process: str
    value: str  # cpu_s | peak_rss_bytes | peak_rss_mib
    worse: Worse = "higher"
    source: str = "process"

    def describe(self) -> str:
        return f"process {self.process} {self.value}"


SourceMetric = Cl2Metric | PrometheusMetric | ProcessMetric


def _pct(q: float | None) -> str:
    return f"{(q or 0) * 100:g}"


def _labels(table: Section, key: str = "labels") -> Labels:
    sub = table.table(key)
    return tuple(sorted((k, sub.get_str(k)) for k in sub))


def worse_of(table: Section) -> Worse:
    worse = table.get_str("worse", "higher")
    if worse not in ("higher", "lower"):
        raise ConfigError(f'{table.where("worse")}: expected "higher" or "lower", got {worse!r}')
    return "higher" if worse == "higher" else "lower"


def parse_source_metric(name: str, table: Section, source: str) -> SourceMetric:
    """One `[metrics.NAME]` table of a non-log source, its keys checked once."""
    if source == "cl2":
        table.check_keys(("source", "summary", "labels", "key", "worse"))
        summary = table.get_str("summary")
        if not summary:
            raise ConfigError(f"{table.where('summary')}: name the summary file's prefix")
        return Cl2Metric(name, summary, table.get_str("key"), _labels(table), worse_of(table))
    if source == "prometheus":
        return _prometheus(name, table)
    if source == "process":
        table.check_keys(("source", "process", "value", "worse"))
        value = table.get_str("value", "cpu_s")
        if value not in PROCESS_VALUES:
            choices = ", ".join(PROCESS_VALUES)
            raise ConfigError(f"{table.where('value')}: expected one of {choices}, got {value!r}")
        return ProcessMetric(name, table.get_str("process"), value, worse_of(table))
    raise ConfigError(
        f"{table.where('source')}: expected one of {', '.join(SOURCES)}, got {source!r}"
    )


def _prometheus(name: str, table: Section) -> PrometheusMetric:
    table.check_keys(
        ("source", "target", *PROMETHEUS_KINDS, "labels", "quantile", "unit", "worse", "absent")
    )
    kinds = [k for k in PROMETHEUS_KINDS if k in table]
    if len(kinds) != 1:
        raise ConfigError(
            f"{table.file}: `{table.path}` needs exactly one of {', '.join(PROMETHEUS_KINDS)} "
            "(the metric family to read, and how)"
        )
    target = table.get_str("target", "apiserver")
    if target not in TARGETS:
        raise ConfigError(
            f"{table.where('target')}: expected one of {', '.join(TARGETS)} (whose /metrics), "
            f"got {target!r}"
        )
    kind = kinds[0]
    raw = table.data[kind]
    families = (raw,) if isinstance(raw, str) else tuple(table.get_str_list(kind))
    if not families or not all(families):
        raise ConfigError(f"{table.where(kind)}: name a metric family")
    quantile = table.opt_float("quantile")
    if kind not in QUANTILE_KINDS and quantile is not None:
        raise ConfigError(f"{table.where('quantile')}: a {kind} has no quantile; remove it")
    if kind in QUANTILE_KINDS and (quantile is None or not 0 <= quantile <= 1):
        raise ConfigError(
            f"{table.where('quantile')}: a {kind} needs a quantile between 0 and 1 (e.g. 0.99)"
        )
    unit = table.opt_str("unit")
    if unit is not None and (kind not in QUANTILE_KINDS or unit not in UNIT_SCALE):
        raise ConfigError(
            f"{table.where('unit')}: expected one of {', '.join(UNIT_SCALE)} for a histogram or "
            f"summary, got {unit!r}"
        )
    if quantile is not None and not math.isfinite(quantile):
        raise ConfigError(f"{table.where('quantile')} must be a finite number")
    absent = table.get_str("absent", "skip")
    if absent not in ABSENT or (kind in QUANTILE_KINDS and "absent" in table):
        raise ConfigError(
            f"{table.where('absent')}: a counter's, gauge's or series' absence is \"skip\" "
            f'(the default) or "zero"; got {absent!r}'
            + ("" if kind not in QUANTILE_KINDS else f" for a {kind}")
        )
    worse = worse_of(table)
    labels = _labels(table)
    return PrometheusMetric(
        name, kind, families, labels, quantile, unit, worse, absent=absent, target=target
    )


# The built-ins: names a SIG Scalability reader knows, sources the CI jobs and backends give.
_PATCH_NODE_STATUS = (
    ("Resource", "nodes"),
    ("Scope", "resource"),
    ("Subresource", "status"),
    ("Verb", "PATCH"),
)
BUILTIN_SOURCE_METRICS: tuple[SourceMetric, ...] = (
    # CL2 load test (perf-tests clusterloader2/testing/load): API call latency SLI, p99 in ms.
    Cl2Metric(
        "apiserver_patch_node_status_p99_ms",
        "APIResponsivenessPrometheus_load_",
        "Perc99",
        _PATCH_NODE_STATUS,
    ),
    Cl2Metric(
        "pod_startup_p99_ms",
        "PodStartupLatency_PodStartupLatency_load_",
        "Perc99",
        (("Metric", "pod_startup"),),
    ),
    # Pods scheduled per second; CL2 holds `max` to its threshold (scheduling_throughput.go).
    Cl2Metric("scheduling_throughput", "SchedulingThroughput_load_", "max", (), "lower"),
    # The apiserver's /metrics over the warmup.
    # A CounterVec prints nothing until its first child (client_golang): a run that
    # terminated no watcher has no series, the good case.
    PrometheusMetric(
        "terminated_watchers",
        "counter",
        ("apiserver_terminated_watchers_total", "apiserver_terminated_watchers"),
        (("resource", "nodes"),),
        absent="zero",
    ),
    PrometheusMetric(
        "watch_dispatch_p99_ms",
        "histogram",
        ("apiserver_watch_events_dispatch_duration_seconds",),
        (("resource", "nodes"), ("stage", "total")),
        0.99,
        "ms",
    ),
    PrometheusMetric(
        "patch_nodes_p99_ms",
        "histogram",
        ("apiserver_request_duration_seconds", "apiserver_request_latencies"),
        (("resource", "nodes"), ("verb", "PATCH")),
        0.99,
        "ms",
    ),
    # etcd's own /metrics (the procs backend snapshots it). Names as etcd 3.5.1 serves them
    # (read from a real etcd 3.5.1 beside a v1.32 apiserver; etcd
    # server/storage/mvcc/metrics.go): the watchers the apiservers hold (one per
    # watch the cacher cannot serve: kubernetes #121688 adds one per watch) ...
    PrometheusMetric(
        "etcd_watchers",
        "gauge",
        ("etcd_debugging_mvcc_watcher_total",),
        target="etcd",
    ),
    # ... and the ranges (reads) it served over the warmup; 3.4 and 3.5 print both names.
    PrometheusMetric(
        "etcd_range_requests",
        "counter",
        ("etcd_mvcc_range_total", "etcd_debugging_mvcc_range_total"),
        target="etcd",
    ),
    # Go's runtime collector (client_golang), in every apiserver since 2015.
    PrometheusMetric("apiserver_goroutines", "gauge", ("go_goroutines",)),
    # Backends that run the control plane as processes (procs, local) write processes.json.
    ProcessMetric("apiserver_cpu_s", "kube-apiserver", "cpu_s"),
    ProcessMetric("apiserver_peak_rss_mib", "kube-apiserver", "peak_rss_mib"),
    ProcessMetric("etcd_cpu_s", "etcd", "cpu_s"),
    ProcessMetric("etcd_peak_rss_mib", "etcd", "peak_rss_mib"),
)
