"""Which way a metric gets worse, and the one comparison every verdict makes with it.

Latencies, counts and CPU seconds are worse when higher; a throughput (pods scheduled
per second) is worse when lower. A value *at* the threshold is bad either way: a
threshold is the edge of the bad side.
"""

from __future__ import annotations

from typing import Literal

Worse = Literal["higher", "lower"]


def is_bad(value: float, threshold: float, worse: Worse = "higher") -> bool:
    """Whether `value` is on the bad side of `threshold` for a metric worse when `worse`."""
    return value <= threshold if worse == "lower" else value >= threshold
