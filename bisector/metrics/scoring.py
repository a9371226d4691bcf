"""An evaluation's scores when its metric comes from beside the log.

The log is still scored (its span and timestamps say whether the run covered its
window, was stale or restarted: bisector.measure.provenance judges that as for any
metric); the metric's value then comes from the files `collect` left in the
evaluation's own log directory. A scorer that needs that directory says so with
`in_log_dir` (the `ReadsLogDir` capability): the evaluation binds it to its own
`Candidate.log_dir`, never to a path guessed from the log's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from bisector.errors import CollectError
from bisector.logs import Scores
from bisector.metrics.definitions import SourceMetric
from bisector.metrics.readings import Evidence, Reading, read_metric

LogScorer = Callable[[list[str]], Scores]


@runtime_checkable
class ReadsLogDir(Protocol):
    """A scorer whose metric is read from an evaluation's log directory."""

    def in_log_dir(self, log_dir: Path) -> LogScorer: ...


def with_reading(scores: Scores, reading: Reading) -> Scores:
    """`scores` plus the source metric's value (a user metric of these scores, for
    `metric_value`) and where it came from (`sources`)."""
    metrics = dict(scores.metrics)
    metrics[reading.name] = reading.value
    sources = dict(metrics.get("sources") or {})  # type: ignore[call-overload]
    sources[reading.name] = reading.to_dict()
    metrics["sources"] = sources
    names = (*scores.user_metrics, reading.name)
    return Scores(metrics, names, scores.seen, scores.window, scores.unparsable_lines)


@dataclass(frozen=True)
class SourceScorer:
    """The log scored by `log_scorer`, and `metric` read from `log_dir`."""

    log_scorer: LogScorer
    metric: SourceMetric
    log_dir: Path | None = None

    def in_log_dir(self, log_dir: Path) -> SourceScorer:
        return replace(self, log_dir=log_dir)

    def __call__(self, logs: list[str]) -> Scores:
        scores = self.log_scorer(logs)
        if self.log_dir is None:
            raise CollectError(
                f"{self.metric.name} is read from the evaluation's log directory, and none "
                "was given"
            )
        return with_reading(scores, read_metric(self.metric, Evidence.in_log_dir(self.log_dir)))
