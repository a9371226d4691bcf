"""The built-in metric names (a module of its own: definitions and metrics both need them)."""

from __future__ import annotations

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
    "unparsable_lines",
)
