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

# Built-in metrics that only grow while a run goes on (counts, a high-water mark, the
# largest lag so far): a value of the log so far at or above the threshold stays there.
# Not rates or windows: conflicts_per_min, cacher_saturated_after_s and window can fall.
MONOTONE_METRICS = frozenset(
    {"conflicts", "node_writes", "lines", "cacher_hwm", "forced_watcher_closes", "dispatch_lag_s"}
)
