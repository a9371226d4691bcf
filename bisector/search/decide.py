"""From measurements to verdicts: the threshold, and the rule for repeated runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bisector.errors import BisectorError
from bisector.numbers import format_number as _n


@dataclass(frozen=True)
class Decision:
    verdict: str | None  # "good", "bad", "skip"; None: measure again
    reason: str = ""


class DecisionRule(Protocol):
    """Turns a commit's values so far (None = a run without data) into a verdict or 'more'."""

    def decide(self, values: Sequence[float | None], threshold: float) -> Decision: ...

    def planned_runs(self) -> int:
        """Runs per commit when nothing is ambiguous (for --dry-run estimates)."""
        ...


@dataclass(frozen=True)
class MajorityRule:
    """Up to `repeats` runs; stop once a majority agrees; runs without data do not vote.

    After `repeats` runs without a majority, the median of the values decides;
    with no value at all the commit is *skip*, carrying the last run's reason.
    """

    repeats: int = 1

    def planned_runs(self) -> int:
        return (self.repeats // 2) + 1

    def decide(self, values: Sequence[float | None], threshold: float) -> Decision:
        valid = [v for v in values if v is not None]
        bad = sum(v >= threshold for v in valid)
        good = len(valid) - bad
        need = self.repeats // 2 + 1
        if bad >= need:
            return Decision("bad", f"{bad} of {len(values)} runs at or above {_n(threshold)}")
        if good >= need:
            return Decision("good", f"{good} of {len(values)} runs below {_n(threshold)}")
        if len(values) < self.repeats:
            return Decision(None)
        if not valid:
            return Decision("skip", "no run produced data")
        median = statistics.median(valid)
        verdict = "bad" if median >= threshold else "good"
        return Decision(verdict, f"no majority; median {_n(median)} vs {_n(threshold)}")


def calibrate_threshold(good: float, bad: float) -> tuple[float, str]:
    """A threshold between the endpoints' values, and a sentence saying how it was set."""
    if bad <= good:
        raise BisectorError(
            f"the bad endpoint does not score worse than the good one (good {_n(good)}, "
            f"bad {_n(bad)}); check the range and the metric"
        )
    if good > 0 and bad / good >= 10:
        value = math.sqrt(good * bad)
        return value, (
            f"calibrated: geometric mean of good {_n(good)} and bad {_n(bad)} "
            f"(they differ {bad / good:.0f}x)"
        )
    value = (good + bad) / 2
    return value, f"calibrated: midpoint of good {_n(good)} and bad {_n(bad)}"


@dataclass(frozen=True)
class ConfirmRule:
    """Confirmation when runs may flip: one run agreeing with the search is enough; a run
    that disagrees is measured again and a majority of `repeats` decides.

    A single flipped run must not undo a culprit the posterior is sure of; a wrong
    culprit is no likelier to pass than with one run (its first run must flip too).
    """

    expected: str  # "bad" for the culprit, "good" for its parent
    repeats: int = 3

    def planned_runs(self) -> int:
        return 1

    def decide(self, values: Sequence[float | None], threshold: float) -> Decision:
        valid = [v for v in values if v is not None]
        if len(values) == 1 and len(valid) == 1:
            verdict = "bad" if valid[0] >= threshold else "good"
            if verdict == self.expected:
                return Decision(
                    verdict,
                    f"1 run {'at or above' if verdict == 'bad' else 'below'} "
                    f"{_n(threshold)}, as the search found",
                )
        return MajorityRule(self.repeats).decide(values, threshold)
