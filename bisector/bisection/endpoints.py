"""The endpoints: measured first, they set (or check) the threshold.

Good must score good and bad must score bad. With a noise model and a calibrated
threshold, one flipped endpoint run must cost a few runs, not the search: the
endpoints are measured again until their runs separate (bounded, said on screen),
and the threshold comes from all their runs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from bisector.errors import BisectorError
from bisector.measure.evaluator import Evaluator
from bisector.measure.measurement import Measurement
from bisector.metrics.direction import Worse, is_bad
from bisector.search.base import Job, Search, SearchRange
from bisector.search.decide import DecisionRule, calibrate_threshold
from bisector.search.likelihood import MetricLikelihood
from bisector.settings import RunSettings

MAX_ENDPOINT_RUNS = 12


@dataclass
class Endpoints:
    threshold: float
    how: str
    good_value: float
    bad_value: float
    good_runs: list[float] = field(default_factory=list)
    bad_runs: list[float] = field(default_factory=list)


def endpoint_runs(settings: RunSettings) -> int:
    if settings.search.endpoint_runs:
        return settings.search.endpoint_runs
    return 3 if settings.search.likelihood == "metric" else settings.repeats


def _values(runs: list[Measurement]) -> list[float]:
    return [m.value for m in runs if m.value is not None]


def _value(runs: list[Measurement], which: str, commit: str, *, before_bad: bool = False) -> float:
    values = _values(runs)
    if not values:
        reason = runs[-1].reason if runs else "not measured"
        unlaunched = " (the bad endpoint was not launched)" if before_bad else ""
        raise BisectorError(
            f"the {which} endpoint {commit[:12]} could not be measured ({reason}){unlaunched}; "
            "fix the backend or the metric and rerun the same command"
        )
    return float(statistics.median(values))


def _swap(good: str, bad: str) -> str:
    """The fix when the endpoints come out reversed: most often --good and --bad swapped."""
    return (
        f"are --good and --bad swapped? rerun with --good {bad[:12]} --bad {good[:12]} "
        "(or pick another range or metric)"
    )


def _separated(good: list[float], bad: list[float], worse: Worse = "higher") -> bool:
    """The runs tell the endpoints apart: the bad side's median is worse, and a
    threshold between the medians puts most of each side's runs on its own side."""
    if not good or not bad:
        return False
    g, b = statistics.median(good), statistics.median(bad)
    if b == g or is_bad(g, b, worse):
        return False
    threshold, _ = calibrate_threshold(g, b, worse)
    return sum(not is_bad(v, threshold, worse) for v in good) * 2 > len(good) and (
        sum(is_bad(v, threshold, worse) for v in bad) * 2 > len(bad)
    )


class EndpointCheck:
    def __init__(
        self,
        evaluator: Evaluator,
        settings: RunSettings,
        search: Search,
        whole: SearchRange,
        rule: DecisionRule,
    ) -> None:
        self.b = evaluator
        self.settings = settings
        self.search = search
        self.whole = whole
        self.rule = rule

    def _spare(self, k: int) -> list[Job]:
        if not self.settings.search.measure_ahead:
            return []
        return self.search.first_picks(self.whole, k)

    def _measure(self, n: int) -> tuple[list[Measurement], list[Measurement]]:
        good, bad = self.whole.good, self.whole.bad
        if self.b.slots == 1:
            # One cluster at a time: the good endpoint's runs first, alone. If none gives a
            # value the run stops here, before the bad endpoint's cluster is paid for (a
            # real one took 35 minutes). With parallel slots both run at once anyway.
            # The bad endpoint's build is the next one needed: it runs during this warmup.
            def bad_next(k: int) -> list[Job]:
                return [Job(bad, "endpoint", "the bad endpoint, measured next")][:k]

            (runs_good,) = self.b.measure_n([good], "endpoint", n, bad_next)
            _value(runs_good, "good", good, before_bad=True)
        runs_good, runs_bad = self.b.measure_n([good, bad], "endpoint", n, self._spare)
        return runs_good, runs_bad

    def _enough_runs(self) -> tuple[list[Measurement], list[Measurement]]:
        """Runs per endpoint; more while the sides overlap (noise models).

        Metric likelihood: the fitted means decide every later run's evidence, so
        their error must be small against the sides' separation D (in sigmas): the
        standard error of the difference, sqrt(2 / n), at most D / 4, i.e.
        n >= 32 / D^2 (capped). Verdict likelihood with a calibrated threshold: one
        flipped run at each end would make the medians cross; measure again (2 more
        each, so medians are of odd counts) until the runs separate.
        """
        s = self.settings.search
        n = endpoint_runs(self.settings)
        runs_good, runs_bad = self._measure(n)
        if s.likelihood == "metric" and not s.endpoint_runs:
            values = (_values(runs_good), _values(runs_bad))
            if all(values):
                separation = MetricLikelihood.fit(values[0], values[1]).separation
                needed = min(MAX_ENDPOINT_RUNS, math.ceil(32 / max(separation, 1e-3) ** 2))
                if needed > n:
                    self.b.progress.note(
                        f"endpoints overlap ({separation:.1f} sigmas): {needed} runs each"
                    )
                    runs_good, runs_bad = self._measure(needed)
            return runs_good, runs_bad
        if s.error_rate > 0 and self.settings.threshold is None and not s.endpoint_runs:
            while not _separated(_values(runs_good), _values(runs_bad)):
                n = max(len(runs_good), len(runs_bad))
                if n >= MAX_ENDPOINT_RUNS:
                    break
                n = min(MAX_ENDPOINT_RUNS, n + 2 if n % 2 else n + 1)
                self.b.progress.note(
                    f"endpoint runs do not separate yet (good {_values(runs_good)}, bad "
                    f"{_values(runs_bad)}): measuring each {n} times"
                )
                runs_good, runs_bad = self._measure(n)
        return runs_good, runs_bad

    def check(self) -> Endpoints:
        good, bad = self.whole.good, self.whole.bad
        runs_good, runs_bad = self._enough_runs()
        self.b.set_reference(runs_good, runs_bad)
        good_value = _value(runs_good, "good", good)
        bad_value = _value(runs_bad, "bad", bad)
        if self.settings.threshold is not None:
            threshold, how = self.settings.threshold, "given"
        else:
            if is_bad(good_value, bad_value, self.settings.worse) and good_value != bad_value:
                raise BisectorError(
                    f"the good endpoint {good[:12]} scored worse ({good_value:g}) than the bad "
                    f"endpoint {bad[:12]} ({bad_value:g}): {_swap(good, bad)}"
                )
            threshold, how = calibrate_threshold(good_value, bad_value, self.settings.worse)
        found = Endpoints(
            threshold, how, good_value, bad_value, _values(runs_good), _values(runs_bad)
        )
        said = self.b.set_onset(runs_bad, threshold)
        if said:
            self.b.progress.note(said)
        s = self.settings.search
        if s.error_rate > 0 and s.likelihood == "verdict":
            return found  # single runs may be wrong: the posterior weighs the endpoints' runs
        verdicts: tuple[str | None, str | None]
        if s.noise_aware:
            worse = self.settings.worse
            verdicts = (
                "bad" if is_bad(good_value, threshold, worse) else "good",
                "bad" if is_bad(bad_value, threshold, worse) else "good",
            )
        else:
            verdicts = (
                self.b.decide(good, threshold, self.rule, "endpoint", why="endpoint").verdict,
                self.b.decide(bad, threshold, self.rule, "endpoint", why="endpoint").verdict,
            )
        if verdicts != ("good", "bad"):
            fix = (
                _swap(good, bad)
                if verdicts == ("bad", "good")
                else "pick another range, metric or threshold"
            )
            raise BisectorError(
                f"endpoints do not separate at threshold {threshold:g}: good {good[:12]} scored "
                f"{good_value:g} ({verdicts[0]}), bad {bad[:12]} scored {bad_value:g} "
                f"({verdicts[1]}); {fix}"
            )
        return found
