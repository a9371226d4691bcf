"""Where a source metric's files are, and its value read from them.

`Evidence` names the files of one run: an evaluation's log directory (the names in
bisector.collected), a directory a user points `score` at, or explicit
snapshots. `read_metric` returns a `Reading` (the value and where it came from) or
raises CollectError saying why there is none: a missing, empty or garbled file is
never a value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bisector.collected import (
    APISERVER,
    CL2_REPORT_DIR,
    METRICS_AFTER,
    METRICS_BEFORE,
    PROCESSES,
    metrics_file,
    read_processes,
)
from bisector.errors import CollectError
from bisector.metrics import cl2, prometheus
from bisector.metrics.definitions import Cl2Metric, ProcessMetric, PrometheusMetric, SourceMetric

MIB = 1 << 20


@dataclass(frozen=True)
class Reading:
    name: str
    value: float
    source: str  # "cl2", "prometheus", "process"
    where: str  # the file(s) it came from, and what was read
    # Wall time (epoch s) the measured process started (/metrics' process_start_time_seconds),
    # its measurement began (processes.json `start`) or the CL2 summary was written: never
    # before the launch, an evaluation holds it to its launch as it holds the log
    # (bisector.measure.provenance). None: the files do not say.
    started: float | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"source": self.source, "from": self.where}
        if self.started is not None:
            out["started"] = self.started
        return out


@dataclass(frozen=True)
class Evidence:
    """The files one run left besides (or instead of) its apiserver log."""

    cl2_dir: Path | None = None
    metrics_before: Path | None = None
    metrics_after: Path | None = None
    processes_dir: Path | None = None  # holds processes.json
    # Holds every target's snapshots by their collected names (metrics_file); None: the
    # pair above was handed over explicitly and is read whatever the metric's target.
    metrics_dir: Path | None = None

    @classmethod
    def in_log_dir(cls, log_dir: Path) -> Evidence:
        """An evaluation's log directory, as `collect` leaves it (bisector/collected.py)."""
        return cls(
            log_dir / CL2_REPORT_DIR,
            log_dir / METRICS_BEFORE,
            log_dir / METRICS_AFTER,
            log_dir,
            log_dir,
        )

    def snapshots(self, target: str) -> tuple[Path | None, Path | None]:
        """The (start, end) snapshots of `target`'s /metrics."""
        if target == APISERVER or self.metrics_dir is None:
            return self.metrics_before, self.metrics_after
        d = self.metrics_dir
        return d / metrics_file("before", target), d / metrics_file("after", target)

    @classmethod
    def in_dir(cls, directory: Path) -> Evidence:
        """A directory given to `score`: a CL2 report dir itself (its summaries at the top,
        as in a CI build's artifacts/), or an evaluation's log directory."""
        own = directory / CL2_REPORT_DIR
        has_summaries = any(p.suffix == ".json" and p.name != PROCESSES for p in _files(directory))
        return cls(
            directory if has_summaries or not own.is_dir() else own,
            directory / METRICS_BEFORE,
            directory / METRICS_AFTER,
            directory,
            directory,
        )


def _files(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_file()]
    except OSError:
        return []


def read_metric(metric: SourceMetric, evidence: Evidence) -> Reading:
    """The metric's value from `evidence`; CollectError when the files cannot give one."""
    if isinstance(metric, Cl2Metric):
        return _cl2(metric, evidence)
    if isinstance(metric, PrometheusMetric):
        return _prometheus(metric, evidence)
    return _process(metric, evidence)


def _cl2(metric: Cl2Metric, evidence: Evidence) -> Reading:
    if evidence.cl2_dir is None:
        raise CollectError(f"{metric.name}: no CL2 report directory was given")
    got = cl2.read_dir(evidence.cl2_dir, metric.summary, dict(metric.labels), metric.key)
    where = f"{evidence.cl2_dir / got.file} {metric.key}"
    return Reading(metric.name, got.value, "cl2", where, got.written)


def _prometheus(metric: PrometheusMetric, evidence: Evidence) -> Reading:
    first, last = evidence.snapshots(metric.target)
    if last is None:
        raise CollectError(f"{metric.name}: no metrics snapshot was given")
    after = prometheus.read_snapshot(last)
    before = None
    if metric.kind != "summary":  # a summary's quantile is the apiserver's own, at the end
        if first is None:
            raise CollectError(f"{metric.name}: no snapshot from the warmup's start")
        before = prometheus.read_snapshot(first)
    value, family = prometheus_value(metric, after, before)
    files = str(last)
    if before is not None:
        files = f"{first} -> {last}"
    return Reading(metric.name, value, "prometheus", f"{files} {family}", after.start_time)


def prometheus_value(
    metric: PrometheusMetric, after: prometheus.Snapshot, before: prometheus.Snapshot | None
) -> tuple[float, str]:
    """The metric over the window between the snapshots, and the family it was read from."""
    suffix = "_bucket" if metric.kind == "histogram" else ""
    family = next((f for f in metric.families if after.of(f + suffix)), metric.families[0])
    selector = dict(metric.labels)
    if metric.kind in ("gauge", "series"):
        assert before is not None
        window = prometheus.Window(before, after)
        zero = metric.absent == "zero"
        if metric.kind == "gauge":
            return prometheus.gauge_value(window, family, selector, absent_is_zero=zero), family
        count = prometheus.series_count(window, family, selector, absent_is_zero=zero)
        return float(count), family
    if metric.kind == "counter":
        assert before is not None
        window = prometheus.Window(before, after)
        absent_is_zero = metric.absent == "zero"
        increase = prometheus.counter_increase(
            window, family, selector, absent_is_zero=absent_is_zero
        )
        return increase, family
    assert metric.quantile is not None
    if metric.kind == "histogram":
        assert before is not None
        window = prometheus.Window(before, after)
        raw = prometheus.histogram_quantile(window, family, selector, metric.quantile)
        sample = family + "_bucket"
    else:
        raw = prometheus.summary_quantile(after, family, selector, metric.quantile)
        sample = family
    if math.isnan(raw):
        raise CollectError(
            f"{family}{_shown(selector)} has no observations in the window: no "
            f"p{metric.quantile * 100:g} to read"
        )
    if metric.unit is None:
        return raw, family
    unit = prometheus.unit_of(after, sample, family)
    if unit is None:
        raise CollectError(
            f"cannot tell the unit of {family} (no _seconds suffix, no unit in its HELP); "
            "remove `unit` to read it as it is"
        )
    scale = prometheus.UNIT_SCALE[unit] / prometheus.UNIT_SCALE[metric.unit]
    return raw * scale, family


def _shown(selector: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in selector.items()) + "}"


def _process(metric: ProcessMetric, evidence: Evidence) -> Reading:
    if evidence.processes_dir is None:
        raise CollectError(f"{metric.name}: no process measurements were given")
    usages = read_processes(evidence.processes_dir)
    usage = usages.get(metric.process)
    if usage is None:
        names = ", ".join(sorted(usages)) or "none"
        raise CollectError(
            f"{evidence.processes_dir / PROCESSES} has no process {metric.process!r} "
            f"(it has: {names})"
        )
    where = evidence.processes_dir / PROCESSES
    if usage.end <= usage.start:  # e.g. no sample of it at the warmup's start
        raise CollectError(f"{where}: {metric.process} was measured over 0s: no measurement")
    if metric.value != "cpu_s" and usage.peak_rss_bytes <= 0:
        raise CollectError(f"{where}: {metric.process} has no peak RSS (it was not readable)")
    if metric.value == "cpu_s":
        value = usage.cpu_s
    elif metric.value == "peak_rss_bytes":
        value = float(usage.peak_rss_bytes)
    else:
        value = usage.peak_rss_bytes / MIB
    return Reading(
        metric.name,
        value,
        "process",
        f"{where} {metric.process} {metric.value} over {usage.end - usage.start:.0f}s",
        usage.start,
    )
