"""Where a per-run metric stepped up, robust to a lone noisy run.

Runs are classified good/bad against a threshold (given, or placed between the
two sides of the largest step in log space); the step is the split that
misclassifies the fewest runs (all of them, when several tie). It only counts
when at least `min_bad_runs` runs after it are bad, so one outlier, in the
middle or at the end, triggers nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    last_good: int  # index of the last good run before the step
    first_bad: int  # index of the first bad run after it
    threshold: float
    threshold_source: str  # "given" or "change point"
    before: float  # median of the valid runs before the step
    after: float  # median from the step on


def _log(value: float) -> float:
    return math.log(max(value, 0.0) + 1.0)


def _largest_step_threshold(values: Sequence[float], min_ratio: float) -> float | None:
    """Geometric midpoint of the split with the largest log-median difference."""
    best: tuple[float, float] | None = None
    for split in range(1, len(values)):
        before = statistics.median(_log(v) for v in values[:split])
        after = statistics.median(_log(v) for v in values[split:])
        if best is None or after - before > best[0]:
            best = (after - before, (before + after) / 2)
    if best is None or best[0] < math.log(min_ratio):
        return None
    return math.exp(best[1]) - 1.0


def find_step(
    values: Sequence[float | None],
    *,
    threshold: float | None = None,
    min_bad_runs: int = 2,
    min_ratio: float = 2.0,
) -> Step | None:
    """The latest good->bad step in `values` (None = run without data), or None."""
    valid = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(valid) < 1 + min_bad_runs:
        return None
    source = "given"
    if threshold is None:
        threshold = _largest_step_threshold([v for _, v in valid], min_ratio)
        source = "change point"
        if threshold is None:
            return None
    bad = [v >= threshold for _, v in valid]
    # errors(s) = bad runs before s + good runs from s on. Several splits may tie
    # (G G B G B B): the range spans all of them, so the culprit is inside either way.
    errors = sum(not b for b in bad)
    scores = [errors]
    for split in range(1, len(bad) + 1):
        errors += 1 if bad[split - 1] else -1
        scores.append(errors)
    fewest = min(scores)
    earliest = scores.index(fewest)
    latest = len(scores) - 1 - scores[::-1].index(fewest)
    tail = bad[latest:]
    if sum(tail) < min_bad_runs or sum(tail) * 2 <= len(tail):
        return None
    good_before = [k for k in range(earliest) if not bad[k]]
    if not good_before:
        return None
    first_bad = next(k for k in range(latest, len(bad)) if bad[k])
    return Step(
        last_good=valid[good_before[-1]][0],
        first_bad=valid[first_bad][0],
        threshold=threshold,
        threshold_source=source,
        before=statistics.median(v for _, v in valid[:earliest]),
        after=statistics.median(v for _, v in valid[latest:]),
    )
