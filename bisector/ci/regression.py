"""From scored CI runs to a regression range: the last good and the first bad run.

Runs with no value for the metric (no logs, a --v=2 log, unreadable) take no
part: they are neither good nor bad, and a range that spans them still holds
the culprit. The step itself is `changepoint.find_step`: a given threshold or
a change point, and at least `min_bad_runs` bad runs after it, so a lone noisy
run triggers nothing.

Direction: the step finder looks for a rise. A metric worse when lower (a throughput) is
handed to it as RECIPROCAL_SCALE / value (microseconds per pod for pods per second: a
halving throughput is a doubling there, in the same log space; the scale keeps the values
far above 1, where the finder's log(v + 1) is log v), and the step's numbers are turned
back before anyone reads them.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from bisector.ci.changepoint import Step, find_step
from bisector.ci.scoring import RunScore
from bisector.metrics import Worse

RECIPROCAL_SCALE = 1e6


@dataclass(frozen=True)
class RegressionRange:
    metric: str
    good: RunScore  # the last good run before the step
    bad: RunScore  # the first bad run after it
    step: Step

    @property
    def good_commit(self) -> str | None:
        return self.good.info.commit

    @property
    def bad_commit(self) -> str | None:
        return self.bad.info.commit

    def why_not_bisectable(self) -> str | None:
        """None when `bisector run` can take this range, else the reason it cannot."""
        missing = [f"run {r.run}" for r in (self.good, self.bad) if not r.info.commit]
        if missing:
            return f"the metadata of {' and '.join(missing)} names no commit"
        if self.good_commit == self.bad_commit:
            return (
                f"runs {self.good.run} and {self.bad.run} tested the same commit: "
                "the step is noise or infrastructure, not code"
            )
        return None

    def as_json(self) -> dict[str, object]:
        return {
            "good": self.good_commit,
            "bad": self.bad_commit,
            "good_run": self.good.run,
            "bad_run": self.bad.run,
        }


def find_regression(
    runs: Sequence[RunScore],
    metric: str,
    *,
    threshold: float | None = None,
    worse: Worse = "higher",
    min_bad_runs: int = 2,
    min_ratio: float = 2.0,
) -> RegressionRange | None:
    """The latest good->bad step of `metric` over `runs` (in run order), or None."""
    values = [oriented(r.value(metric), worse) for r in runs]
    limit = oriented(threshold, worse)
    if threshold is not None and limit is None:
        return None  # a throughput threshold at or below 0: nothing is below it
    step = find_step(values, threshold=limit, min_bad_runs=min_bad_runs, min_ratio=min_ratio)
    if step is None:
        return None
    step = in_units(step, worse)
    return RegressionRange(metric, runs[step.last_good], runs[step.first_bad], step)


def oriented(value: float | None, worse: Worse) -> float | None:
    """`value` as the step finder reads it: higher is worse. A lower-is-worse value is
    RECIPROCAL_SCALE / value; 0 or less has none (no data: a run that scheduled nothing
    is a broken run, neither good nor bad)."""
    if value is None or worse == "higher":
        return value
    return RECIPROCAL_SCALE / value if value > 0 else None


def in_units(step: Step, worse: Worse) -> Step:
    """The step's threshold and medians back in the metric's own units."""
    if worse == "higher":
        return step
    k = RECIPROCAL_SCALE
    return dataclasses.replace(
        step, threshold=k / step.threshold, before=k / step.before, after=k / step.after
    )


def bisect_argv(found: RegressionRange, *, extra: Sequence[str] = ()) -> list[str]:
    """The `bisector run` command line for the commits between the two runs."""
    good, bad = found.good_commit, found.bad_commit
    if not good or not bad:
        raise ValueError("range without commits")
    return ["bisector", "run", "--good", good, "--bad", bad, "--metric", found.metric, *extra]


def command_text(argv: Sequence[str]) -> str:
    return shlex.join(argv)
