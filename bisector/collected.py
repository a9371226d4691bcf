"""What `collect` may leave in an evaluation's log directory besides the apiserver log(s).

The log directory (`Candidate.log_dir`) is the evidence of one evaluation. Backends that can
see more than the log put it here under these names, and the metric sources that read it
(`prometheus`, `process`, `cl2`) look for it here, so a backend and a metric source never
need to know of each other:

- `metrics-before.prom`, `metrics-after.prom`: the apiserver's `/metrics` (Prometheus text
  exposition format) read at the warmup's start and at its end (in `collect`); another
  control-plane process's as `metrics-before-<target>.prom`, `metrics-after-<target>.prom`
  (`etcd`, `kube-controller-manager`, ...: `metrics_file`);
- `processes.json`: CPU seconds and peak RSS of named processes over the warmup (below);
- `cl2/`: a ClusterLoader2 report directory (`--report-dir`) from a workload that ran
  during the warmup;
- `load.json`: how much of the load the backend offered ran over the warmup (below).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from bisector.errors import CollectError

METRICS_BEFORE = "metrics-before.prom"
METRICS_AFTER = "metrics-after.prom"
APISERVER = "apiserver"  # the target whose snapshots carry the plain names above
PROCESSES = "processes.json"
CL2_REPORT_DIR = "cl2"
MAX_RSS_BYTES = 1 << 63  # more than any address space: a garbled number


def metrics_file(when: str, target: str = APISERVER) -> str:
    """The snapshot's file name: `metrics-<when>.prom` for the apiserver (what every backend
    writes), `metrics-<when>-<target>.prom` for another process (`when`: before, after)."""
    return f"metrics-{when}.prom" if target == APISERVER else f"metrics-{when}-{target}.prom"


@dataclass(frozen=True)
class ProcessUsage:
    """One named process over the warmup window (wall-clock epoch seconds)."""

    name: str  # e.g. "kube-apiserver", "etcd"
    cpu_s: float  # user + system CPU seconds spent between `start` and `end`
    peak_rss_bytes: int  # the largest resident set seen (VmHWM at `end`, or sampled)
    start: float
    end: float


def write_processes(log_dir: Path, usages: list[ProcessUsage]) -> Path:
    path = log_dir / PROCESSES
    path.write_text(json.dumps({"processes": [asdict(u) for u in usages]}, indent=1) + "\n")
    return path


def read_processes(log_dir: Path) -> dict[str, ProcessUsage]:
    """The usages by name; CollectError when the file is missing or not what it should be."""
    path = log_dir / PROCESSES
    try:
        items = json.loads(path.read_text())["processes"]
        if not isinstance(items, list):
            raise TypeError("'processes' is not a list")
        usages = [_usage(item) for item in items]
    except FileNotFoundError:
        raise CollectError(f"no process measurements in {log_dir} ({PROCESSES})") from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError, OverflowError) as exc:
        raise CollectError(f"{path} cannot be read: {type(exc).__name__}: {exc}") from None
    found: dict[str, ProcessUsage] = {}
    for u in usages:
        if u.name in found:  # appended across launches, or measured apart: which one is it?
            raise CollectError(f"{path} names process {u.name!r} twice: which one ran is unknown")
        found[u.name] = u
    return found


def _usage(item: object) -> ProcessUsage:
    if not isinstance(item, dict):
        raise TypeError("a process entry is not an object")
    usage = ProcessUsage(
        name=str(item["name"]),
        cpu_s=float(item["cpu_s"]),
        peak_rss_bytes=int(item["peak_rss_bytes"]),
        start=float(item["start"]),
        end=float(item["end"]),
    )
    numbers = (usage.cpu_s, usage.start, usage.end)
    if not all(math.isfinite(n) for n in numbers) or usage.cpu_s < 0 or usage.end < usage.start:
        raise ValueError(f"impossible numbers for process {usage.name!r}")
    if not 0 <= usage.peak_rss_bytes < MAX_RSS_BYTES:
        raise ValueError(f"impossible peak RSS for process {usage.name!r}")
    return usage


LOAD = "load.json"


@dataclass(frozen=True)
class DeliveredLoad:
    """How much of the load a backend offered its cluster actually ran over the warmup:
    a good-looking number measured under no load says nothing about the code."""

    what: str  # e.g. "watch events (node status writes seen by the node watches)"
    offered: float  # how many the load should have made over the warmup
    delivered: int  # how many it made
    min_fraction: float  # below this share the evaluation is a skip

    @property
    def fraction(self) -> float | None:
        return self.delivered / self.offered if self.offered > 0 else None

    @property
    def ran(self) -> bool:
        return self.fraction is None or self.fraction >= self.min_fraction

    def describe(self) -> str:
        share = "" if self.fraction is None else f" ({self.fraction:.0%})"
        return (
            f"{self.delivered} of the ~{self.offered:.0f} {self.what} offered{share}; "
            f"at least {self.min_fraction:.0%} needed"
        )


def write_load(log_dir: Path, load: DeliveredLoad) -> Path:
    path = log_dir / LOAD
    path.write_text(json.dumps(asdict(load), indent=1) + "\n")
    return path


def read_load(log_dir: Path) -> DeliveredLoad | None:
    """The delivered load a backend wrote; None when it wrote none (or not readably)."""
    try:
        data = json.loads((log_dir / LOAD).read_text())
        return DeliveredLoad(
            str(data["what"]),
            float(data["offered"]),
            int(data["delivered"]),
            float(data["min_fraction"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
