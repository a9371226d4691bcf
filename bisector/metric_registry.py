"""The one metric registry: built-in metrics plus a config's `[metrics.NAME]` request counts.

`score`, `run`, `history` and `nightly` all ask it whether a metric name exists and
for the scorer that knows the user's definitions, so a name valid for one is valid
for all and the error reads the same everywhere.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from bisector.config import Section
from bisector.errors import ConfigError
from bisector.logs import (
    METRIC_NAMES,
    IncrementalScore,
    LogRestarted,
    RequestMetric,
    Scores,
    load_metric_definitions,
    score_logs,
)
from bisector.search.early import GrowingScorer, GrowingScorerFactory, Scorer

DEFAULT_METRIC = "conflicts"


@dataclass(frozen=True)
class MetricRegistry:
    definitions: dict[str, RequestMetric] = field(default_factory=dict)  # user-defined
    fingerprint: str = ""  # of the `[metrics]` table: measurements depend on it

    @classmethod
    def from_config(cls, config: Section) -> MetricRegistry:
        """Built-ins plus the config's `[metrics]` table (validated here, once)."""
        table = config.table("metrics")
        return cls(load_metric_definitions(table), table.fingerprint() if table.data else "")

    @property
    def names(self) -> tuple[str, ...]:
        return (*METRIC_NAMES, *self.definitions)

    def check(self, name: str, where: str) -> str:
        """`name` if known; else one ConfigError line naming `where` and the choices."""
        if name not in self.names:
            raise ConfigError(
                f"{where}: unknown metric {name!r}; choose one of: {', '.join(self.names)}, "
                f"or define it in a [metrics.{name}] table"
            )
        return name

    def growing_scorer(self) -> GrowingScorerFactory:
        """A fresh incremental scorer per evaluation, for checks during the warmup."""
        definitions = self.definitions
        return lambda: _growing(definitions)

    def scorer(self) -> Scorer:
        """score_logs, knowing the user-defined request counts."""
        if not self.definitions:
            return score_logs
        return functools.partial(score_logs, extra_metrics=self.definitions)


def _growing(definitions: dict[str, RequestMetric]) -> GrowingScorer:
    """Scores of a log that grows between calls, reading only what was appended.

    One file: the incremental scorer (O(new bytes) per call); a file replaced or cut
    (a peek written anew, an apiserver restart) is scored again from its start. Several
    files (a rotated set) are scored whole, as at the end of the run.
    """
    incremental = IncrementalScore(extra_metrics=definitions or None)

    def scores(logs: list[str]) -> Scores:
        if len(logs) != 1:
            return score_logs(logs, extra_metrics=definitions or None)
        try:
            return incremental.feed(logs[0])
        except LogRestarted:
            incremental.reset()
            return incremental.feed(logs[0])

    return scores


def check_threshold(value: float | None, where: str) -> float | None:
    """A threshold must be finite: nan compares false with every value (all runs good)."""
    if value is not None and not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value}")
    return value
