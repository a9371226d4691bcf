"""Reading kube-apiserver logs and turning them into metrics.

Public API (used by `score`, the run loop and history):
    score_logs(sources, *, since=None, until=None, extra_metrics=None) -> Scores
        Scores.seen / Scores.window: LogWindow(first, last, .seconds) or None (typed: the
        log's whole span, and the part since/until keep; None = no data in it);
        Scores.unparsable_lines: garbled lines, never counted as data
    IncrementalScore(...).feed(path) -> Scores   (a growing log, O(new bytes) per call)
    LogError: the log cannot give a verdict (missing, corrupt, truncated, not a log)
    metric_value(scores, name) -> float | None   (None: the log has no data for it)
    load_metric_definitions(section) -> {name: RequestMetric}   (user `[metrics.NAME]`)
    parse_request_metric(name, table) -> RequestMetric          (one of them)
    METRIC_NAMES: the built-in metric names

Scalars used for verdicts (higher is worse; None -> skip):
    conflicts, node_writes, lines       -> the count
    conflicts_per_min                   -> conflicts per minute of the measured window
    cacher_hwm                          -> the node cacher's value (`*api.Node`, `*core.Node`,
                                           `*v1.Node` or `nodes`)
    cacher_saturated_after_s            -> seconds the node cacher spent saturated (window end
                                           minus the value; 0 if it never reached 100)
    forced_watcher_closes               -> the node cacher's count (0 when none logged)
    dispatch_lag_s                      -> max (None without dispatch lines)
    window                              -> its length in seconds
    unparsable_lines                    -> garbled lines (records.py)
    user-defined request metrics        -> the count

Layout: sources.py (paths, -, gzip by content, gs://, https://), reader.py (time order,
parallel byte ranges / blocks), chunks.py (led blocks of whole lines), patterns.py +
scanner.py + cacher.py (one read, exact counts into a partial.Partial): the usual block in
one compiled pass (glogscan.py, _glogscan.c), any other with numpy (records.py,
nodewrites.py), timestamps.py (years for glog headers), scores.py (the `metrics`
object), definitions.py (user metrics).
"""

from __future__ import annotations

from bisector.logs.definitions import (
    RequestMetric,
    load_metric_definitions,
    parse_request_metric,
)
from bisector.logs.errors import LogError
from bisector.logs.incremental import IncrementalScore, LogRestarted
from bisector.logs.names import METRIC_NAMES
from bisector.logs.reader import score_logs
from bisector.logs.scores import LogWindow, Scores, metric_value

__all__ = [
    "METRIC_NAMES",
    "IncrementalScore",
    "LogError",
    "LogRestarted",
    "LogWindow",
    "RequestMetric",
    "Scores",
    "load_metric_definitions",
    "metric_value",
    "parse_request_metric",
    "score_logs",
]
