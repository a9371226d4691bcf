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
    unparsable_lines                   -> garbled lines (impossible times, binary bytes,
                                          over-long lines, JSON that does not parse)
    user `[metrics.NAME]`              -> the count (None without request lines)

A window left empty by since/until (past the log's end) is no data: every scalar is None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from bisector.errors import BisectorError
from bisector.logs.names import METRIC_NAMES
from bisector.logs.partial import Partial
from bisector.logs.timestamps import iso

_EPOCH = datetime(1970, 1, 1)

NODE_CACHER_TYPES = ("*api.Node", "*core.Node", "*v1.Node", "nodes")


@dataclass(frozen=True)
class LogWindow:
    """The time a log covers: its first and last timestamp (epoch seconds, the log's clock)."""

    first: float
    last: float

    @property
    def seconds(self) -> float:
        return max(0.0, self.last - self.first)

    def to_dict(self) -> dict[str, object]:
        return {"first": iso(self.first), "last": iso(self.last), "seconds": round(self.seconds, 6)}


@dataclass
class Scores:
    metrics: dict[str, object] = field(default_factory=dict)
    user_metrics: tuple[str, ...] = ()
    # First and last timestamp of the whole log (None: no timestamped line).
    seen: LogWindow | None = field(default=None, compare=False)
    # What the metrics measure: `seen` cut by since/until; None when that leaves nothing.
    window: LogWindow | None = field(default=None, compare=False)
    unparsable_lines: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        """Scores rebuilt from their `metrics` (a cache) get their typed fields back."""
        if self.seen is None:
            self.seen = _window_from(self.metrics.get("seen"))
        if self.window is None:
            self.window = _window_from(self.metrics.get("window"))
        if not self.unparsable_lines and isinstance(self.metrics.get("unparsable_lines"), int):
            self.unparsable_lines = int(self.metrics["unparsable_lines"])  # type: ignore[call-overload]


def _window_from(doc: object) -> LogWindow | None:
    if not isinstance(doc, dict):
        return None
    try:
        first, last = (
            (datetime.fromisoformat(str(doc[k])) - _EPOCH).total_seconds()
            for k in ("first", "last")
        )
    except (KeyError, ValueError):
        return None
    return LogWindow(first, last)


def build_scores(
    part: Partial, since: float | None, until: float | None, user_metrics: tuple[str, ...]
) -> Scores:
    seen = None
    if part.first_ts is not None and part.last_ts is not None:
        seen = LogWindow(part.first_ts, max(part.first_ts, part.last_ts))
    window = _window(seen, since, until)
    if window is None:  # nothing in the window: no data, whatever was counted outside it
        part = Partial(lines=part.lines, unparsable=part.unparsable)
    requests = part.has_requests
    metrics: dict[str, object] = {
        "conflicts": part.conflicts if requests else None,
        "conflicts_per_min": (
            round(part.conflicts / (window.seconds / 60.0), 3)
            if requests and window and window.seconds
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
        "forced_watcher_closes": (
            dict(sorted(part.forced_closes.items())) if window is not None else None
        ),
        "dispatch_lag_s": _dispatch_lag(part, since, until),
        "lines": part.lines,
        "window": window.to_dict() if window else None,
        "seen": seen.to_dict() if seen else None,
        "unparsable_lines": part.unparsable,
    }
    for name in user_metrics:
        metrics[name] = part.extra.get(name, 0) if requests else None
    return Scores(metrics, user_metrics, seen, window, part.unparsable)


def _window(seen: LogWindow | None, since: float | None, until: float | None) -> LogWindow | None:
    """`seen` cut to [since, until); None when they leave nothing of it (past the end)."""
    if seen is None:
        return None
    if since is None and until is None:
        return seen
    first = seen.first if since is None else max(seen.first, since)
    last = seen.last if until is None else min(seen.last, until)
    return LogWindow(first, last) if last > first else None


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


# Scores a log (a list: a rotated set is one log), as `score_logs` does.
Scorer = Callable[[list[str]], Scores]
# A scorer of one evaluation's growing log: called again each time the log has grown,
# it returns the Scores of the whole log so far. `GrowingScorerFactory()` makes a fresh
# one per evaluation (it may keep where it stopped reading: O(new bytes) per call).
GrowingScorer = Callable[[list[str]], Scores]
GrowingScorerFactory = Callable[[], GrowingScorer]


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
        if not m.get("lines") or ("window" in m and m["window"] is None):
            return None
        return _node_value(value) or 0.0
    if name == "dispatch_lag_s":
        return float(value["max"]) if isinstance(value, dict) else None
    if name == "window":
        return float(value["seconds"]) if isinstance(value, dict) else None
    if name == "lines":
        return float(value) if isinstance(value, int) and value else None
    if name == "unparsable_lines":
        return float(value) if isinstance(value, int) and m.get("lines") else None
    return float(value) if isinstance(value, int | float) else None
