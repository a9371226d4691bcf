"""How much one run says about "this commit is bad": log-likelihoods for the posterior.

Two models (chosen with `[search] likelihood`):

* `verdict`: each run's verdict (value vs threshold) is wrong with the configured
  probability `error_rate`; a bad-looking run multiplies the odds of "bad" by
  (1 - e) / e.
* `metric`: the endpoints are measured several times; each side is fitted as a
  log-normal (mean of log(1 + value) per side, one pooled spread with a floor,
  so the likelihood ratio is monotone in the value: a run worse than the bad
  endpoint never looks good). The ratio of the two densities at a run's value is
  its evidence, clamped: no single run may be more conclusive than the sides'
  own overlap allows (the error of deciding one run at the midpoint,
  Phi(-separation / 2)), and never more than 99:1 unless the sides are more than
  ~4.7 sigmas apart. Clamping keeps a model fitted from a handful of endpoint
  runs from betting everything on one outlier.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_CLAMP = 99.0  # at most 99:1 per run while the sides overlap
MAX_CLAMP = 1e6  # perfectly separated sides: every run is (almost) decisive
SPREAD_FLOOR = 0.05  # in log units: ~5 % run-to-run noise is assumed at the least


@dataclass(frozen=True)
class VerdictLikelihood:
    error_rate: float
    threshold: float

    def __call__(self, value: float) -> tuple[float, float]:
        e = min(max(self.error_rate, 1e-9), 0.5)
        looks_bad = value >= self.threshold
        return (math.log(1 - e), math.log(e)) if looks_bad else (math.log(e), math.log(1 - e))

    def describe(self) -> str:
        return f"verdict likelihood: each run's verdict wrong with probability {self.error_rate:g}"


def _log(value: float) -> float:
    return math.log1p(max(value, 0.0))  # counts can be 0


@dataclass(frozen=True)
class MetricLikelihood:
    good_mean: float  # of log(1 + value)
    bad_mean: float
    spread: float  # pooled standard deviation of log(1 + value), floored
    clamp: float  # largest likelihood ratio one run may carry

    @classmethod
    def fit(cls, good: Sequence[float], bad: Sequence[float]) -> MetricLikelihood:
        lg, lb = [_log(v) for v in good], [_log(v) for v in bad]
        squares = sum((x - statistics.fmean(lg)) ** 2 for x in lg)
        squares += sum((x - statistics.fmean(lb)) ** 2 for x in lb)
        dof = len(lg) + len(lb) - 2
        spread = math.sqrt(squares / dof) if dof > 0 else 0.0
        spread = max(spread, SPREAD_FLOOR)
        good_mean, bad_mean = statistics.fmean(lg), statistics.fmean(lb)
        separation = abs(bad_mean - good_mean) / spread
        one_run_error = 0.5 * math.erfc(separation / 2 / math.sqrt(2))  # Phi(-sep/2)
        clamp = (1 - one_run_error) / one_run_error if one_run_error > 0 else MAX_CLAMP
        clamp = min(max(clamp, MIN_CLAMP), MAX_CLAMP)
        return cls(good_mean, bad_mean, spread, clamp)

    @property
    def separation(self) -> float:
        return abs(self.bad_mean - self.good_mean) / self.spread

    def __call__(self, value: float) -> tuple[float, float]:
        x = _log(value)
        s2 = 2 * self.spread**2
        log_ratio = ((x - self.good_mean) ** 2 - (x - self.bad_mean) ** 2) / s2
        bound = math.log(self.clamp)
        log_ratio = min(max(log_ratio, -bound), bound)
        return log_ratio / 2, -log_ratio / 2

    def describe(self) -> str:
        return (
            f"metric likelihood: log-normal sides {self.separation:.1f} sigmas apart, "
            f"one run at most {self.clamp:.3g}:1"
        )


Likelihood = VerdictLikelihood | MetricLikelihood
