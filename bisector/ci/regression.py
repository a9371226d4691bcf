"""From scored CI runs to a regression range: the last good and the first bad run.

Runs with no value for the metric (no logs, a --v=2 log, unreadable) take no
part: they are neither good nor bad, and a range that spans them still holds
the culprit. The change points are `changepoint.find_change_points` (several,
each with its p-value and direction); the range is the newest regression among
them, or, with a threshold given, the newest good->bad split against it. Either
way a step needs at least `min_bad_runs` runs after it, so a lone noisy run
triggers nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from bisector.ci.changepoint import ChangePoint, Step, find_change_points, step_of
from bisector.ci.scoring import RunScore
from bisector.metric_registry import MetricRegistry


def metric_higher_is_worse(metrics: MetricRegistry, metric: str) -> bool:
    """Whether a higher value of `metric` is worse: the one place `history` and `nightly` ask.

    The registry answers (bisector.metrics.direction): a throughput is worse when lower.
    """
    return metrics.worse(metric) == "higher"


@dataclass(frozen=True)
class RunChange:
    """A change point with the CI runs around it."""

    point: ChangePoint
    at: RunScore  # the first run of the new segment
    before: RunScore  # the last run at the old level (the range starts here)
    after: RunScore  # the first run at the new level (and ends here)

    def as_json(self, hunted: bool) -> dict[str, object]:
        return {
            "run": self.at.run,
            "last_before_run": self.before.run,
            "first_after_run": self.after.run,
            "last_before_commit": self.before.info.commit,
            "first_after_commit": self.after.info.commit,
            "before": self.point.before,
            "after": self.point.after,
            "change": self.point.change,
            "p_value": self.point.p_value,
            "direction": self.point.direction,
            "hunted": hunted,
        }


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


@dataclass(frozen=True)
class History:
    """What the runs say about `metric`: every change point, and the range to bisect."""

    metric: str
    changes: list[RunChange]  # oldest first
    found: RegressionRange | None  # the newest regression (or the threshold's step)

    def hunted(self, change: RunChange) -> bool:
        """Whether the range came from this change point (not from a given threshold)."""
        return (
            self.found is not None
            and self.found.step.threshold_source == "change point"
            and (self.found.good.run, self.found.bad.run) == (change.before.run, change.after.run)
        )


def analyse(
    runs: Sequence[RunScore],
    metric: str,
    *,
    threshold: float | None = None,
    min_bad_runs: int = 2,
    higher_is_worse: bool = True,
) -> History:
    """Change points of `metric` over `runs` (in run order) and the range to bisect."""
    values = [r.value(metric) for r in runs]
    points = find_change_points(values, higher_is_worse=higher_is_worse, min_runs=min_bad_runs)
    step = step_of(
        values,
        points,
        threshold=threshold,
        min_bad_runs=min_bad_runs,
        higher_is_worse=higher_is_worse,
    )
    changes = [
        RunChange(p, runs[p.index], runs[p.last_before], runs[p.first_after]) for p in points
    ]
    found = None
    if step is not None:
        found = RegressionRange(metric, runs[step.last_good], runs[step.first_bad], step)
    return History(metric, changes, found)


def find_regression(
    runs: Sequence[RunScore],
    metric: str,
    *,
    threshold: float | None = None,
    min_bad_runs: int = 2,
    higher_is_worse: bool = True,
) -> RegressionRange | None:
    """The newest regression of `metric` over `runs` (in run order), or None."""
    return analyse(
        runs,
        metric,
        threshold=threshold,
        min_bad_runs=min_bad_runs,
        higher_is_worse=higher_is_worse,
    ).found


def bisect_argv(found: RegressionRange, *, extra: Sequence[str] = ()) -> list[str]:
    """The `bisector run` command line for the commits between the two runs."""
    good, bad = found.good_commit, found.bad_commit
    if not good or not bad:
        raise ValueError("range without commits")
    return ["bisector", "run", "--good", good, "--bad", bad, "--metric", found.metric, *extra]


def command_text(argv: Sequence[str]) -> str:
    return shlex.join(argv)
