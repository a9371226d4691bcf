"""Where a per-run metric changed level: every change point, its significance and direction.

Values are taken in log space (a latency's noise is relative, and the 2017 conflicts
went from thousands to millions) and divided by the series' noise scale: the median
absolute difference between consecutive runs, which a step or a lone outlier barely
moves. `ruptures` segments the running median of three of that (KernelCPD, linear
kernel: exact least squares with a penalty of PENALTY_PER_LOG_N * log(n) per change
point); no segment is shorter than `min_runs`, so a lone run, in the middle or at the
end, is never a level of its own.

Each change point then gets a p-value: the difference of the medians of the segments on
its two sides over its standard error under the noise scale (a robust z-test,
`significance`), and must have most of the runs of each side, at least `min_runs`, on
that side of the midpoint (`supported`: one outlier beside an ordinary run is not a
level). The weakest change point above `max_p_value`, or changing the level by less
than `min_change`, is dropped and its neighbours retested until all that remain pass
(the merge step of Otava / Hunter, Fleming et al. 2023). A change point is a regression
when it moves the metric the worse way (`higher_is_worse`); the newest regression is
the one to hunt first. scripts/compare_changepoints.py measured this against Otava,
MongoDB's E-divisive and the hand-written finder it replaced (docs/history.md).

Around a change point, the range to bisect spans every split of its two segments that
misclassifies fewest runs against the midpoint, out to runs beyond it by a noise scale:
a noisy run just after the step (G G B G B B) widens the range instead of moving it
past the culprit. Below MIN_RUNS_FOR_TEST runs with data there is no noise to measure:
the rule of the old finder applies (a step of at least 2x, p-value None). With a
threshold given, runs are classified against it and the newest good->bad split with a
majority of bad runs after it is the step, as before.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Penalty of one change point, in noise variances: PENALTY_PER_LOG_N * log(n), a little
# above BIC's 2 log(n) (a change point adds a location and a level). With the test below
# it decides little: in scripts/compare_changepoints.py the totals moved by under 1 %
# from 1 to 4.
PENALTY_PER_LOG_N = 3.0
MIN_NOISE = 0.01  # a noise scale below 1 % is rounding, not a measurement of noise
MAX_P_VALUE = 0.001
MIN_CHANGE = 0.1  # a level change below 10 % is not worth a bisection
# Below this many runs with data the noise scale is mostly the step itself (with 2 runs
# each side, p < 0.001 is out of reach): the rule of the hand-written finder this module
# replaced applies instead, a step of at least SHORT_MIN_RATIO in the worse direction.
MIN_RUNS_FOR_TEST = 6
SHORT_MIN_RATIO = 2.0


@dataclass(frozen=True)
class ChangePoint:
    index: int  # first run of the new segment, as the segmentation placed it
    last_before: int  # last run at the old level: the range to bisect starts here...
    first_after: int  # ... and ends here (runs between them are ambiguous or have no data)
    before: float  # median of the segment before
    after: float  # median of the segment after
    p_value: float | None  # None: too few runs for the test (the short-series rule)
    regression: bool  # the metric moved the worse way
    level: float  # between `before` and `after`: runs are classified against it

    @property
    def direction(self) -> str:
        return "regression" if self.regression else "improvement"

    @property
    def change(self) -> float | None:
        """Relative change of the level: +0.5 is 50 % higher after; None from a level of 0."""
        return self.after / self.before - 1.0 if self.before else None

    def as_step(self) -> Step:
        """This change point as the step to hunt (meaningful for a regression)."""
        return Step(
            last_good=self.last_before,
            first_bad=self.first_after,
            threshold=self.level,
            threshold_source="change point",
            before=self.before,
            after=self.after,
            p_value=self.p_value,
        )


@dataclass(frozen=True)
class Step:
    """The regression to hunt: the last good and first bad run around it."""

    last_good: int  # index of the last good run before the step
    first_bad: int  # index of the first bad run after it
    threshold: float
    threshold_source: str  # "given" or "change point"
    before: float  # median of the valid runs before the step
    after: float  # median from the step on
    p_value: float | None = None  # the change point's; None with a given threshold


def p_value_text(p_value: float | None) -> str:
    """How reports show a change point's p-value (None: the short-series rule found it)."""
    if p_value is None:
        return f"too few runs for a p-value (a {SHORT_MIN_RATIO:g}x step)"
    # Smaller p-values say more about the normal tail than about CI runs.
    return "p<1e-12" if p_value < 1e-12 else f"p={p_value:.2g}"


def is_worse(value: float, threshold: float, *, higher_is_worse: bool) -> bool:
    """A run is bad at or beyond the threshold, on the metric's worse side."""
    return value >= threshold if higher_is_worse else value <= threshold


def _with_data(values: Sequence[float | None]) -> list[tuple[int, float]]:
    """(index, value) of the runs with data; NaN or infinity is no data, never good or bad."""
    return [(i, float(v)) for i, v in enumerate(values) if v is not None and math.isfinite(v)]


def _log(value: float) -> float:
    return math.log(max(value, 0.0) + 1.0)


def _unlog(value: float) -> float:
    return math.exp(value) - 1.0


def noise_scale(logs: Sequence[float], cuts: Sequence[int] = ()) -> float:
    """Standard deviation of one run's noise: median |difference| of consecutive runs.

    Differences across a cut (a change point, first index of a new segment) are left
    out. Steps not cut yet and outliers touch one or two differences each, and the
    median ignores them. For Gaussian noise, a difference has deviation sigma*sqrt(2),
    and its median absolute value is 0.6745 of that.
    """
    across = set(cuts)
    diffs = [abs(logs[i] - logs[i - 1]) for i in range(1, len(logs)) if i not in across]
    if not diffs:
        return MIN_NOISE
    return max(statistics.median(diffs) / (0.6745 * math.sqrt(2.0)), MIN_NOISE)


def significance(left: Sequence[float], right: Sequence[float], sigma: float) -> float:
    """Two-sided p-value that two segments (log values) share one level.

    The medians' difference over its standard error under the series' noise scale
    (a median's is sqrt(pi/2) sigma/sqrt(n)): robust to an outlier inside a segment,
    and meaningful for a segment of two runs because sigma comes from the whole series.
    """
    error = sigma * math.sqrt(math.pi / 2) * math.sqrt(1 / len(left) + 1 / len(right))
    z = (statistics.median(right) - statistics.median(left)) / error
    return math.erfc(abs(z) / math.sqrt(2.0))


def segment(logs: Sequence[float], sigma: float, min_runs: int) -> list[int]:
    """ruptures' candidate change points (first index of each new segment), oldest first.

    `KernelCPD` with the linear kernel: the exact least-squares segmentation (PELT's l2
    cost, in ruptures' C code: 0.1 ms for 40 runs where the pure-Python PELT with the
    l1 cost took 50), penalised PENALTY_PER_LOG_N * log(n) per change point in units
    of the noise variance. It segments the running median of three runs: least squares
    chases a lone outlier (and can move a step's cut onto it), the median of three
    removes it and keeps every level of two runs or more, edges included. `_prune`
    tests the candidates on the runs themselves.
    """
    import numpy as np
    import ruptures  # imported here: scipy's import costs a second the CLI need not pay
    from scipy.ndimage import median_filter

    n = len(logs)
    if n < 2 * min_runs:
        return []
    smooth = median_filter(np.asarray(logs, dtype=float), size=3, mode="nearest")
    algo = ruptures.KernelCPD(kernel="linear", min_size=min_runs).fit((smooth / sigma)[:, None])
    ends = algo.predict(pen=PENALTY_PER_LOG_N * math.log(n))
    return [int(e) for e in ends[:-1]]


def supported(left: Sequence[float], right: Sequence[float], min_runs: int) -> bool:
    """Whether most runs of each side, and at least `min_runs`, lie on their side's half.

    The halves meet at the midpoint of the two medians. A two-run segment made of one
    outlier and one ordinary run has a median (their mean) far from its neighbours, but
    only one run beyond the midpoint: a lone bad run is noise, whatever the test says.
    """
    before, after = statistics.median(left), statistics.median(right)
    level = (before + after) / 2
    rising = after > before
    beyond = sum((y > level) == rising for y in right)
    short = sum((y > level) != rising for y in left)
    return all(
        count >= min(min_runs, len(side)) and count * 2 > len(side)
        for count, side in ((beyond, right), (short, left))
    )


def _prune(
    logs: Sequence[float],
    cuts: list[int],
    *,
    min_runs: int,
    max_p_value: float,
    min_change: float,
) -> list[tuple[int, float]]:
    """The cuts that pass, each with its p-value; the weakest is dropped first, then retested.

    The noise scale is retaken at each round from the differences inside segments, so
    a step already cut does not inflate it (in a series of 8 runs it is one in 7).
    An unsupported cut (see `supported`) counts as p = 1, the weakest of all.
    """
    cuts = sorted(cuts)
    while cuts:
        bounds = [0, *cuts, len(logs)]
        sigma = noise_scale(logs, cuts)
        tested = []
        for k in range(1, len(bounds) - 1):
            left, right = logs[bounds[k - 1] : bounds[k]], logs[bounds[k] : bounds[k + 1]]
            shift = abs(statistics.median(right) - statistics.median(left))
            p_value = significance(left, right, sigma) if supported(left, right, min_runs) else 1.0
            tested.append((p_value, shift))
        weakest = max(range(len(cuts)), key=lambda k: tested[k][0])
        if tested[weakest][0] <= max_p_value:
            weakest = min(range(len(cuts)), key=lambda k: tested[k][1])
            if tested[weakest][1] >= math.log1p(min_change):
                return [(cut, p) for cut, (p, _) in zip(cuts, tested, strict=True)]
        del cuts[weakest]
    return []


def _tied_splits(after_like: Sequence[bool]) -> tuple[int, int]:
    """Earliest and latest split of a run sequence that misclassify fewest runs.

    errors(s) = after-like runs before s + before-like runs from s on. Several splits
    may tie (G G B G B B): the range spans all of them, so the culprit is inside either way.
    """
    errors = sum(not b for b in after_like)
    scores = [errors]
    for split in range(1, len(after_like) + 1):
        errors += 1 if after_like[split - 1] else -1
        scores.append(errors)
    fewest = min(scores)
    earliest = scores.index(fewest)
    latest = len(scores) - 1 - scores[::-1].index(fewest)
    return earliest, latest


def _range(logs: Sequence[float], level: float, rising: bool, sigma: float) -> tuple[int, int]:
    """Last run at the old level and first at the new one, around a change in `logs`.

    Runs are after-like beyond the midpoint `level`; the range spans every split that
    misclassifies fewest runs, then reaches out to runs that are beyond it by a noise
    scale, so a first bad run that noise made look good (or a good one that looks bad)
    stays inside the range: a wider range costs a bisection step, a range that misses
    the culprit costs the hunt.
    """
    signed = [(y - level) if rising else (level - y) for y in logs]
    after_like = [d > 0 for d in signed]
    earliest, latest = _tied_splits(after_like)
    before_side = [j for j in range(earliest) if not after_like[j]]
    after_side = [j for j in range(latest, len(logs)) if after_like[j]]
    clear_before = [j for j in before_side if signed[j] < -sigma] or before_side
    clear_after = [j for j in after_side if signed[j] > sigma] or after_side
    return clear_before[-1], clear_after[0]


def find_change_points(
    values: Sequence[float | None],
    *,
    higher_is_worse: bool = True,
    min_runs: int = 2,
    max_p_value: float = MAX_P_VALUE,
    min_change: float = MIN_CHANGE,
) -> list[ChangePoint]:
    """Every significant change of level in `values` (None = run without data), oldest first."""
    valid = _with_data(values)
    if len(valid) < MIN_RUNS_FOR_TEST:
        return _short_series(values, higher_is_worse=higher_is_worse, min_runs=min_runs)
    logs = [_log(v) for _, v in valid]
    sigma = noise_scale(logs)
    cuts = _prune(
        logs,
        segment(logs, sigma, min_runs),
        min_runs=min_runs,
        max_p_value=max_p_value,
        min_change=min_change,
    )
    bounds = [0, *(c for c, _ in cuts), len(logs)]
    sigma = noise_scale(logs, bounds[1:-1])
    found = []
    for k, (cut, p_value) in enumerate(cuts, start=1):
        start, end = bounds[k - 1], bounds[k + 1]
        left, right = logs[start:cut], logs[cut:end]
        before, after = statistics.median(left), statistics.median(right)
        level = (before + after) / 2
        last_before, first_after = _range(logs[start:end], level, after > before, sigma)
        found.append(
            ChangePoint(
                index=valid[cut][0],
                last_before=valid[start + last_before][0],
                first_after=valid[start + first_after][0],
                before=statistics.median(v for _, v in valid[start:cut]),
                after=statistics.median(v for _, v in valid[cut:end]),
                p_value=p_value,
                regression=(after > before) == higher_is_worse,
                level=_unlog(level),
            )
        )
    return found


def _short_series(
    values: Sequence[float | None], *, higher_is_worse: bool, min_runs: int
) -> list[ChangePoint]:
    """Too few runs for a test: a step of SHORT_MIN_RATIO or more the worse way, if any.

    The threshold is the geometric midpoint of the split whose medians differ most the
    worse way; the step is then found against it as with a given threshold.
    """
    valid = [v for _, v in _with_data(values)]
    sign = 1.0 if higher_is_worse else -1.0
    best: tuple[float, float] | None = None
    for split in range(1, len(valid)):
        before = statistics.median(_log(v) for v in valid[:split])
        after = statistics.median(_log(v) for v in valid[split:])
        if best is None or sign * (after - before) > best[0]:
            best = (sign * (after - before), (before + after) / 2)
    if best is None or best[0] < math.log(SHORT_MIN_RATIO):
        return []
    level = _unlog(best[1])
    step = step_of(
        values, [], threshold=level, min_bad_runs=min_runs, higher_is_worse=higher_is_worse
    )
    if step is None:
        return []
    return [
        ChangePoint(
            index=step.first_bad,
            last_before=step.last_good,
            first_after=step.first_bad,
            before=step.before,
            after=step.after,
            p_value=None,
            regression=True,
            level=level,
        )
    ]


def newest_regression(points: Sequence[ChangePoint]) -> ChangePoint | None:
    """The change point to hunt first: the newest one that made the metric worse."""
    return next((c for c in reversed(points) if c.regression), None)


def step_of(
    values: Sequence[float | None],
    points: Sequence[ChangePoint],
    *,
    threshold: float | None = None,
    min_bad_runs: int = 2,
    higher_is_worse: bool = True,
) -> Step | None:
    """The step to hunt: the newest regression among `points`, or the threshold's step.

    With a threshold, runs at or beyond it are bad, and the step is the split that
    misclassifies fewest runs, with at least `min_bad_runs` bad runs (a majority) after it.
    """
    if threshold is None:
        point = newest_regression(points)
        return point.as_step() if point is not None else None
    valid = _with_data(values)
    if len(valid) < 1 + min_bad_runs:
        return None
    bad = [is_worse(v, threshold, higher_is_worse=higher_is_worse) for _, v in valid]
    earliest, latest = _tied_splits(bad)
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
        threshold_source="given",
        before=statistics.median(v for _, v in valid[:earliest]),
        after=statistics.median(v for _, v in valid[latest:]),
    )


def find_step(
    values: Sequence[float | None],
    *,
    threshold: float | None = None,
    min_bad_runs: int = 2,
    higher_is_worse: bool = True,
) -> Step | None:
    """The newest good->bad step in `values` (None = run without data), or None."""
    points = (
        find_change_points(values, higher_is_worse=higher_is_worse, min_runs=min_bad_runs)
        if threshold is None
        else []
    )
    return step_of(
        values,
        points,
        threshold=threshold,
        min_bad_runs=min_bad_runs,
        higher_is_worse=higher_is_worse,
    )
