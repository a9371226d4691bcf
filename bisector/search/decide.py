"""From measurements to verdicts: the threshold, and the rule for repeated runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bisector.errors import BisectorError
from bisector.metrics.direction import Worse, is_bad
from bisector.numbers import format_number as _n


@dataclass(frozen=True)
class SameTree:
    """A same-tree merge: the verdict on a commit came from runs of other commits with its
    git tree (a merge and its branch's last commit build the same code)."""

    commits: tuple[str, ...]  # the commits measured, full hashes
    values: tuple[str, ...]  # their values, as a person reads them

    def text(self) -> str:
        shown = ", ".join(dict.fromkeys(c[:12] for c in self.commits))
        return f"same tree as {shown}, measured there: {', '.join(self.values)}"


@dataclass(frozen=True)
class Decision:
    verdict: str | None  # "good", "bad", "skip"; None: measure again
    reason: str = ""
    same_tree: SameTree | None = None  # decided by runs of another commit with this tree


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
    worse: Worse = "higher"  # which way the metric gets worse (bisector.metrics.direction)

    def planned_runs(self) -> int:
        return (self.repeats // 2) + 1

    def decide(self, values: Sequence[float | None], threshold: float) -> Decision:
        valid = [v for v in values if v is not None]
        bad = sum(is_bad(v, threshold, self.worse) for v in valid)
        good = len(valid) - bad
        need = self.repeats // 2 + 1
        at_or, past = _sides(self.worse)
        if bad >= need:
            return Decision("bad", f"{bad} of {len(values)} runs {at_or} {_n(threshold)}")
        if good >= need:
            return Decision("good", f"{good} of {len(values)} runs {past} {_n(threshold)}")
        if len(values) < self.repeats:
            return Decision(None)
        if not valid:
            return Decision("skip", "no run produced data")
        median = statistics.median(valid)
        verdict = "bad" if is_bad(median, threshold, self.worse) else "good"
        return Decision(verdict, f"no majority; median {_n(median)} vs {_n(threshold)}")


def _sides(worse: Worse) -> tuple[str, str]:
    """How runs on the bad and on the good side of the threshold are said."""
    return ("at or above", "below") if worse == "higher" else ("at or below", "above")


# With one endpoint at 0, the threshold is the geometric mean with 1 when the other is at
# least this large (below it, the midpoint).
ZERO_FLOOR_ABOVE = 100.0


def calibrate_threshold(good: float, bad: float, worse: Worse = "higher") -> tuple[float, str]:
    """A threshold between the endpoints' values, and a sentence saying how it was set."""
    if bad == good or is_bad(good, bad, worse):
        raise BisectorError(
            f"the bad endpoint does not score worse than the good one (good {_n(good)}, "
            f"bad {_n(bad)}; worse is {worse}); check the range and the metric"
        )
    low, high = min(good, bad), max(good, bad)
    if low > 0 and high / low >= 10:
        value = math.sqrt(good * bad)
        return value, (
            f"calibrated: geometric mean of good {_n(good)} and bad {_n(bad)} "
            f"(they differ {high / low:.0f}x)"
        )
    if low == 0 and high >= ZERO_FLOOR_ABOVE:
        # An endpoint that counted nothing (no 409 at all) against thousands: the midpoint
        # would sit thousands above the good side and take a bad run longer to pass than
        # to separate. On the log scale the separation lives on, 0 counts as 1, the
        # smallest count there is; only when the other side is large, so that this floor
        # is at most 1/ZERO_FLOOR_ABOVE of it whatever the unit.
        value = math.sqrt(high)
        zero = "good" if good == 0 else "bad"
        return value, (
            f"calibrated: geometric mean of good {_n(good)} and bad {_n(bad)}, "
            f"{zero} {_n(0)} counted as 1 (they differ {high:.0f}x)"
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
    worse: Worse = "higher"

    def planned_runs(self) -> int:
        return 1

    def decide(self, values: Sequence[float | None], threshold: float) -> Decision:
        valid = [v for v in values if v is not None]
        if len(values) == 1 and len(valid) == 1:
            verdict = "bad" if is_bad(valid[0], threshold, self.worse) else "good"
            if verdict == self.expected:
                side = _sides(self.worse)[0 if verdict == "bad" else 1]
                return Decision(verdict, f"1 run {side} {_n(threshold)}, as the search found")
        return MajorityRule(self.repeats, self.worse).decide(values, threshold)
