"""How much one run says about "this commit is bad": log-likelihoods for the posterior.

Two models (chosen with `[search] likelihood`):

* `verdict`: each run's verdict (value vs threshold) is wrong with the configured
  probability `error_rate`; a bad-looking run multiplies the odds of "bad" by
  (1 - e) / e.
* `metric`: the endpoints are measured several times; each side is fitted as a
  log-normal (mean of log(1 + value) per side, one pooled spread with a floor,
  so the likelihood ratio is monotone in the value: a run worse than the bad
  endpoint never looks good). The spread is taken conservatively: the 90 % upper
  confidence bound of the fitted one, widened by the uncertainty of the means.
  The ratio of the two densities at a run's value is its evidence, clamped to
  99:1 per run, so a model fitted from a handful of endpoint runs never bets
  everything on one outlier. Only when the sides are many sigmas apart does the
  clamp rise, to (1 - e) / e where e = Phi(-separation / 2) is the error of
  deciding one run at the midpoint (above 99:1 from ~4.7 sigmas; at most 1e6:1),
  so noise-free runs are as decisive as git bisect's verdicts.
  With overlapping sides the endpoints are measured more (see runner) so the
  fitted means are not biased against the separation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bisector.metrics.direction import Worse, is_bad

MIN_CLAMP = 99.0  # at most 99:1 per run while the sides overlap
MAX_CLAMP = 1e6  # perfectly separated sides: every run is (almost) decisive
SPREAD_FLOOR = 0.05  # in log units: ~5 % run-to-run noise is assumed at the least


@dataclass(frozen=True)
class VerdictLikelihood:
    error_rate: float
    threshold: float
    worse: Worse = "higher"

    def __call__(self, value: float) -> tuple[float, float]:
        e = min(max(self.error_rate, 1e-9), 0.5)
        looks_bad = is_bad(value, self.threshold, self.worse)
        return (math.log(1 - e), math.log(e)) if looks_bad else (math.log(e), math.log(1 - e))

    def describe(self) -> str:
        return f"verdict likelihood: each run's verdict wrong with probability {self.error_rate:g}"


UPPER_Z = 1.2816  # the spread used is the 90 % upper confidence bound of the fitted one


def _upper_bound_factor(dof: int) -> float:
    """sigma_upper / s = sqrt(dof / chi2_0.10(dof)); chi2 by Wilson-Hilferty.

    A handful of endpoint runs easily underestimates the spread, which would make
    single runs look far more conclusive than they are (measured: 30 % wrong
    culprits reported as sure with the plain estimate, bench_bisect lognormal).
    """
    k = float(dof)
    quantile = k * (1 - 2 / (9 * k) - UPPER_Z * math.sqrt(2 / (9 * k))) ** 3
    return math.sqrt(k / max(quantile, 1e-3))


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
        spread = math.sqrt(squares / dof) * _upper_bound_factor(dof) if dof > 0 else 0.0
        # A new run also carries the uncertainty of the side's mean, fitted from few runs.
        spread *= math.sqrt(1 + 1 / max(1, min(len(lg), len(lb))))
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
