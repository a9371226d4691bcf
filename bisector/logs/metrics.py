"""Turning the merged scan of a run into the `metrics` object and verdict scalars.

Scalars used for verdicts (higher is worse; None means no data -> skip):
    conflicts, node_writes, lines      -> the count (None without request lines / lines)
    conflicts_per_min                  -> conflicts over the measured window, per minute
    cacher_hwm                         -> the node cacher's value (`*api.Node`, `*core.Node`,
                                          `*v1.Node` or `nodes`); None when it never logged
    cacher_saturated_after_s           -> seconds the node cacher spent saturated: window
                                          end minus the value, 0 if it never reached 100
    forced_watcher_closes              -> the node cacher's count (0 when none logged)
    dispatch_lag_s                     -> max; None when the log has no dispatch lines
    window                             -> its length in seconds
    user `[metrics.NAME]`              -> the count (None without request lines)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bisector.errors import BisectorError
from bisector.logs.partial import Partial
from bisector.logs.timestamps import iso

METRIC_NAMES = (
    "conflicts",
    "conflicts_per_min",
    "node_writes",
    "cacher_hwm",
    "cacher_saturated_after_s",
    "forced_watcher_closes",
    "dispatch_lag_s",
    "lines",
    "window",
)
NODE_CACHER_TYPES = ("*api.Node", "*core.Node", "*v1.Node", "nodes")


@dataclass
class Scores:
    metrics: dict[str, object] = field(default_factory=dict)
    user_metrics: tuple[str, ...] = ()


def build_scores(
    part: Partial, since: float | None, until: float | None, user_metrics: tuple[str, ...]
) -> Scores:
    window = _window(part, since, until)
    requests = part.has_requests
    metrics: dict[str, object] = {
        "conflicts": part.conflicts if requests else None,
        "conflicts_per_min": (
            round(part.conflicts / (window[2] / 60.0), 3)
            if requests and window and window[2]
            else None
        ),
        "node_writes": part.node_writes if requests else None,
        "cacher_hwm": dict(sorted(part.cacher_hwm.items())),
        "cacher_saturated_after_s": {
            kind: (
                round(part.cacher_full_at[kind] - part.first_ts, 6)
                if kind in part.cacher_full_at and part.first_ts is not None
                else None
            )
            for kind in sorted(part.cacher_hwm)
        },
        "forced_watcher_closes": dict(sorted(part.forced_closes.items())),
        "dispatch_lag_s": _dispatch_lag(part, since, until),
        "lines": part.lines,
        "window": (
            {"first": iso(window[0]), "last": iso(window[1]), "seconds": round(window[2], 6)}
            if window
            else None
        ),
    }
    for name in user_metrics:
        metrics[name] = part.extra.get(name, 0) if requests else None
    return Scores(metrics, user_metrics)


def _window(
    part: Partial, since: float | None, until: float | None
) -> tuple[float, float, float] | None:
    if part.first_ts is None or part.last_ts is None:
        return None
    first = part.first_ts if since is None else max(part.first_ts, since)
    last = part.last_ts if until is None else min(part.last_ts, until)
    return (first, last, max(0.0, last - first))


def _dispatch_lag(
    part: Partial, since: float | None, until: float | None
) -> dict[str, float] | None:
    lags = [
        t - part.write_times[nr - 1]
        for nr, t in part.dispatches
        if 0 < nr <= len(part.write_times)
        and not math.isnan(part.write_times[nr - 1])  # write read without its time
        and (since is None or t >= since)
        and (until is None or t < until)
    ]
    if not lags:
        return None
    return {"max": round(max(lags), 6), "last": round(lags[-1], 6)}


def _node_value(values: object) -> float | None:
    if not isinstance(values, dict):
        return None
    for kind in NODE_CACHER_TYPES:
        if kind in values and values[kind] is not None:
            return float(values[kind])
    return None


def metric_value(scores: Scores, name: str) -> float | None:
    """The scalar a verdict compares with the threshold; None: no data in the input."""
    if name not in METRIC_NAMES and name not in scores.user_metrics:
        known = ", ".join((*METRIC_NAMES, *scores.user_metrics))
        raise BisectorError(f"unknown metric {name!r}; choose one of: {known}")
    m = scores.metrics
    value = m.get(name)
    if name == "cacher_hwm":
        return _node_value(value)
    if name == "cacher_saturated_after_s":
        if _node_value(m["cacher_hwm"]) is None or not isinstance(m["window"], dict):
            return None
        after = _node_value(value)
        if after is None:
            return 0.0
        return max(0.0, float(m["window"]["seconds"]) - after)
    if name == "forced_watcher_closes":
        if not m.get("lines"):
            return None
        return _node_value(value) or 0.0
    if name == "dispatch_lag_s":
        return float(value["max"]) if isinstance(value, dict) else None
    if name == "window":
        return float(value["seconds"]) if isinstance(value, dict) else None
    if name == "lines":
        return float(value) if isinstance(value, int) and value else None
    return float(value) if isinstance(value, int | float) else None
