"""An independent reader of the simulated log, so tests do not trust the model's own counts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# The glog header from shared/reference/kubernetes.md.
HEADER = re.compile(
    r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s+(\d+) ([^:\s]+):(\d+)\] (.*)$"
)
REQUEST = re.compile(
    r"^(GET|POST|PUT|PATCH|DELETE) (\S+): \(([^)]+)\) (\d{3}) \[\[([^\]]+)\] (\S+)\]$"
)
HWM = re.compile(r"^cacher \((\S+)\): (\d+) objects queued in incoming channel\.$")
DISPATCH = re.compile(r"^AAA: dispatching event nr (\d+)$")
GO_DURATION = re.compile(r"^\d+(\.\d+)?(µs|ms|s)$")

# How far a line may be dated before the one above it, by construction: background lines
# are dated up to 9.9ms after their tick (bisector/sim/traffic.py), a kubelet's GET up to
# 1.5ms before the PATCH it precedes (model.py read_gaps).
MAX_OVERLAP_S = 0.0099 + 0.0015


@dataclass
class LogCounts:
    lines: int = 0
    node_patches: int = 0
    conflicts: int = 0
    node_writes: int = 0
    node_hwm: list[int] = field(default_factory=list)
    dispatch_nrs: list[int] = field(default_factory=list)
    forced_closes: int = 0
    bad_lines: list[str] = field(default_factory=list)
    max_backstep_s: float = 0.0  # largest step back in time between consecutive lines
    first_saturated_s: float | None = None


def read_log(path: Path) -> LogCounts:
    counts = LogCounts()
    first = last = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        counts.lines += 1
        header = HEADER.match(raw)
        if not header:
            counts.bad_lines.append(raw)
            continue
        h, m, s, us = (int(header.group(k)) for k in (4, 5, 6, 7))
        t = h * 3600 + m * 60 + s + us / 1e6
        first = t if first is None else first
        if last is not None:
            counts.max_backstep_s = max(counts.max_backstep_s, last - t)
        last = max(t, last or t)
        msg = header.group(11)
        if header.group(9) == "wrap.go":
            req = REQUEST.match(msg)
            if not req or not GO_DURATION.match(req.group(3)):
                counts.bad_lines.append(raw)
                continue
            verb, uri, status = req.group(1), req.group(2), int(req.group(4))
            if not uri.startswith("/api/v1/nodes"):
                continue
            if verb == "PATCH":
                counts.node_patches += 1
                counts.conflicts += status == 409
            if verb in ("POST", "PUT", "PATCH") and status not in (404, 409, 429):
                counts.node_writes += 1
        elif (hwm := HWM.match(msg)) and hwm.group(1) == "*api.Node":
            counts.node_hwm.append(int(hwm.group(2)))
            if int(hwm.group(2)) == 100 and counts.first_saturated_s is None:
                counts.first_saturated_s = t - (first or t)
        elif dispatch := DISPATCH.match(msg):
            counts.dispatch_nrs.append(int(dispatch.group(1)))
        elif msg == "Forcing watcher close due to unresponsiveness: *api.Node":
            counts.forced_closes += 1
    return counts
