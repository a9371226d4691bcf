"""Numbers as a person reads them, written in one place for the screen, reports and status.

A metric's values are written the way its unit asks: counts whole (`2,615`; a count's
threshold rounded up, which decides exactly as the threshold does, since counts are
whole; a median of two runs keeps its half, `12.5`), seconds with their unit
(`23.1 s`, `2m42s`), rates to three significant figures with theirs (`27.7/min`). A
metric this module does not know is written with three significant figures, or whole
from 100 up. "No value" is written one way: `no data`. JSON keeps every number as it
was measured; only what people read is rounded.
"""

from __future__ import annotations

import math
from enum import Enum

from bisector.durations import format_duration

NO_VALUE = "no data"  # the one text for "no value", wherever a person reads it

# The scorer's counts (bisector.logs): whole numbers of lines, requests, objects, closes.
COUNT_METRICS = frozenset(
    {
        "conflicts",
        "node_writes",
        "lines",
        "unparsable_lines",
        "cacher_hwm",
        "forced_watcher_closes",
    }
)


class Unit(Enum):
    COUNT = "count"
    SECONDS = "seconds"
    PER_MINUTE = "per minute"
    PER_SECOND = "per second"
    MILLISECONDS = "milliseconds"
    NUMBER = "number"  # unknown: three significant figures


def unit_of(metric: str) -> Unit:
    """What `metric`'s values are, from its name."""
    if metric in COUNT_METRICS:
        return Unit.COUNT
    if metric.endswith("_per_min"):
        return Unit.PER_MINUTE
    if metric.endswith("_per_s"):
        return Unit.PER_SECOND
    if metric.endswith("_ms"):
        return Unit.MILLISECONDS
    if metric.endswith(("_s", "_seconds")):
        return Unit.SECONDS
    return Unit.NUMBER


def format_number(value: float) -> str:
    """`2,615`, `27.7`, `0.0416`: whole from 100 up, else three significant figures."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value) or abs(value) >= 100:
        return f"{round(value):,}"
    text = f"{value:#.3g}"  # `#`: 35.0 stays three figures, not "35"
    return text.rstrip(".") if "e" not in text else f"{value:.3g}"


def seconds(value: float) -> str:
    """`23.1 s` below a minute (three significant figures), `2m42s` above."""
    if abs(value) >= 60:
        return format_duration(value)
    return f"{format_number(value)} s"


def format_value(
    value: float | None, metric: str, *, threshold: bool = False, worse: str = "higher"
) -> str:
    """One value of `metric` for a person. `threshold`: a count's threshold is rounded to
    the whole count that decides the same (up when higher is worse, down when lower is)."""
    if value is None:
        return NO_VALUE
    unit = unit_of(metric)
    if unit is Unit.COUNT:
        if threshold:  # whole counts: >= t iff >= ceil(t); <= t iff <= floor(t)
            return f"{(math.floor(value) if worse == 'lower' else math.ceil(value)):,}"
        return format_number(value)  # whole, or a median of two runs (12.5)
    if unit is Unit.SECONDS:
        return seconds(value)
    if unit is Unit.MILLISECONDS:
        return f"{format_number(value)} ms"
    if unit is Unit.PER_MINUTE:
        return f"{format_number(value)}/min"
    if unit is Unit.PER_SECOND:
        return f"{format_number(value)}/s"
    return format_number(value)


def format_threshold(value: float, metric: str, worse: str = "higher") -> str:
    return format_value(value, metric, threshold=True, worse=worse)
