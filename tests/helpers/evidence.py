"""What backends and CI builds leave beside the apiserver log, written from the schemas.

- `/metrics` snapshots in the Prometheus text exposition format (`# HELP`/`# TYPE`
  lines, `_bucket{le=...}`/`_sum`/`_count` for histograms), as the apiserver's
  component-base registry prints them, with `process_start_time_seconds`;
- ClusterLoader2 summaries: perfdata (kubernetes/perf-tests
  clusterloader2/pkg/measurement/util/perftype.go: version, dataItems[data, unit, labels])
  and SchedulingThroughput's own shape (pkg/measurement/common/scheduling_throughput.go:
  perc50/perc90/perc99/max), named as pkg/test/simple_test_executor.go names them:
  `<SummaryName>_<test name>_<RFC3339>.json` (perf-tests 4b3415444f4c).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bisector.collected import METRICS_AFTER, METRICS_BEFORE

START_TIME = 1.7e9


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + ",".join(escaped) + "}"


def counter(name: str, series: Sequence[tuple[Mapping[str, str], float]], help: str = "") -> str:
    lines = [f"# HELP {name} {help or 'A counter.'}", f"# TYPE {name} counter"]
    lines += [f"{name}{_labels(labels)} {value:g}" for labels, value in series]
    return "\n".join(lines) + "\n"


def histogram(
    name: str,
    series: Sequence[tuple[Mapping[str, str], Mapping[str, float]]],
    help: str = "",
) -> str:
    """`series`: (labels, {le: cumulative count}) with "+Inf" among the bounds."""
    lines = [f"# HELP {name} {help or 'A histogram.'}", f"# TYPE {name} histogram"]
    for labels, buckets in series:
        for le, count in buckets.items():
            lines.append(f"{name}_bucket{_labels({**labels, 'le': le})} {count:g}")
        lines.append(f"{name}_sum{_labels(labels)} 0")
        lines.append(f"{name}_count{_labels(labels)} {buckets['+Inf']:g}")
    return "\n".join(lines) + "\n"


def summary(
    name: str, series: Sequence[tuple[Mapping[str, str], Mapping[str, float]]], help: str = ""
) -> str:
    """`series`: (labels, {quantile: value})."""
    lines = [f"# HELP {name} {help or 'A summary.'}", f"# TYPE {name} summary"]
    for labels, quantiles in series:
        for q, value in quantiles.items():
            lines.append(f"{name}{_labels({**labels, 'quantile': q})} {value:g}")
        lines.append(f"{name}_sum{_labels(labels)} 0")
        lines.append(f"{name}_count{_labels(labels)} 1")
    return "\n".join(lines) + "\n"


def snapshot(*families: str, start_time: float = START_TIME) -> str:
    process = (
        "# HELP process_start_time_seconds Start time of the process since unix epoch in "
        "seconds.\n# TYPE process_start_time_seconds gauge\n"
        f"process_start_time_seconds {start_time:.2f}\n"
    )
    return process + "".join(families)


def write_snapshots(directory: Path, before: str, after: str) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / METRICS_BEFORE).write_text(before)
    (directory / METRICS_AFTER).write_text(after)
    return directory / METRICS_BEFORE, directory / METRICS_AFTER


# -- ClusterLoader2 ---------------------------------------------------------------------


def summary_name(summary: str, test: str = "load", when: datetime | None = None) -> str:
    stamp = (when or datetime(2026, 8, 7, 16, 16, 53, tzinfo=UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{summary}_{test}_{stamp}.json"


def api_call(
    verb: str, resource: str, subresource: str, scope: str, p99_ms: float
) -> dict[str, object]:
    """One dataItem of APIResponsivenessPrometheus (slos/api_responsiveness_prometheus.go)."""
    return {
        "data": {"Perc50": p99_ms / 4, "Perc90": p99_ms / 2, "Perc99": p99_ms},
        "unit": "ms",
        "labels": {
            "Verb": verb,
            "Resource": resource,
            "Subresource": subresource,
            "Scope": scope,
            "Count": "1200",
            "SlowCount": "0",
        },
    }


def api_responsiveness(patch_node_status_p99_ms: float) -> dict[str, object]:
    return {
        "version": "v1",
        "dataItems": [
            api_call("PATCH", "nodes", "status", "resource", patch_node_status_p99_ms),
            api_call("PATCH", "nodes", "", "resource", 31.0),
            api_call("LIST", "pods", "", "cluster", 412.5),
            api_call("GET", "nodes", "", "resource", 12.25),
        ],
    }


def pod_startup(pod_startup_p99_ms: float) -> dict[str, object]:
    """PodStartupLatency (util/latency_metric.go ToPerfData: labels {Metric: name})."""
    items = []
    for metric, p99 in (
        ("create_to_schedule", 800.0),
        ("schedule_to_run", 1200.0),
        ("run_to_watch", 900.0),
        ("schedule_to_watch", 2000.0),
        ("pod_startup", pod_startup_p99_ms),
    ):
        items.append(
            {
                "data": {"Perc50": p99 / 3, "Perc90": p99 / 1.5, "Perc99": p99},
                "unit": "ms",
                "labels": {"Metric": metric},
            }
        )
    return {"version": "1.0", "dataItems": items}


def scheduling_throughput(max_pods_per_s: float) -> dict[str, object]:
    return {
        "perc50": max_pods_per_s / 2,
        "perc90": max_pods_per_s * 0.8,
        "perc99": max_pods_per_s * 0.95,
        "max": max_pods_per_s,
    }


def write_cl2_report(
    directory: Path,
    *,
    patch_node_status_p99_ms: float = 45.0,
    pod_startup_p99_ms: float = 2800.0,
    throughput: float = 100.0,
    test: str = "load",
) -> Path:
    """A CL2 --report-dir with the three summaries the built-in cl2 metrics read."""
    directory.mkdir(parents=True, exist_ok=True)
    for summary, doc in cl2_summaries(
        patch_node_status_p99_ms=patch_node_status_p99_ms,
        pod_startup_p99_ms=pod_startup_p99_ms,
        throughput=throughput,
    ).items():
        (directory / summary_name(summary, test)).write_text(json.dumps(doc, indent=2))
    return directory


def cl2_summaries(
    *, patch_node_status_p99_ms: float, pod_startup_p99_ms: float, throughput: float
) -> dict[str, dict[str, object]]:
    return {
        "APIResponsivenessPrometheus": api_responsiveness(patch_node_status_p99_ms),
        "APIResponsivenessPrometheus_simple": api_responsiveness(patch_node_status_p99_ms / 2),
        "PodStartupLatency_PodStartupLatency": pod_startup(pod_startup_p99_ms),
        "SchedulingThroughput": scheduling_throughput(throughput),
    }
