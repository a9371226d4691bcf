"""The one metric registry: built-in metrics plus a config's `[metrics.NAME]` tables.

Every metric has a source: `log` (the built-in log metrics, and user request counts:
verb, path, statuses), `cl2`, `prometheus` or `process` (bisector.metrics: read from the
files `collect` leaves beside the log, or that a user hands `score`). `score`, `run`,
`history` and `nightly` all ask it whether a metric name exists, where its value comes
from, which way is worse, and for the scorer that knows the user's definitions, so a
name valid for one is valid for all and the error reads the same everywhere.
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
    parse_request_metric,
    score_logs,
)
from bisector.logs.names import MONOTONE_METRICS
from bisector.logs.scores import GrowingScorer, GrowingScorerFactory, Scorer
from bisector.metrics.definitions import (
    BUILTIN_SOURCE_METRICS,
    SOURCES,
    SourceMetric,
    parse_source_metric,
)
from bisector.metrics.direction import Worse

_BUILTIN_SOURCES = {m.name: m for m in BUILTIN_SOURCE_METRICS}


@dataclass(frozen=True)
class MetricRegistry:
    definitions: dict[str, RequestMetric] = field(default_factory=dict)  # user request counts
    fingerprint: str = ""  # of the `[metrics]` table: measurements depend on it
    user_sources: dict[str, SourceMetric] = field(default_factory=dict)  # user cl2/prom/process

    @classmethod
    def from_config(cls, config: Section) -> MetricRegistry:
        """Built-ins plus the config's `[metrics]` table (validated here, once)."""
        table = config.table("metrics")
        requests: dict[str, RequestMetric] = {}
        sources: dict[str, SourceMetric] = {}
        for name in table:
            sub = table.table(name)
            if name in METRIC_NAMES or name in _BUILTIN_SOURCES:
                raise ConfigError(
                    f"{sub.file}: `{sub.path}` redefines a built-in metric; rename it"
                )
            source = sub.get_str("source", "log")
            if source == "log":
                requests[name] = parse_request_metric(name, sub)
            elif source in SOURCES:
                sources[name] = parse_source_metric(name, sub, source)
            else:
                raise ConfigError(
                    f"{sub.where('source')}: expected one of {', '.join(SOURCES)}, got {source!r}"
                )
        return cls(requests, table.fingerprint() if table.data else "", sources)

    @property
    def sources(self) -> dict[str, SourceMetric]:
        """Every metric read from beside the log: the built-ins and the config's."""
        return {**_BUILTIN_SOURCES, **self.user_sources}

    @property
    def names(self) -> tuple[str, ...]:
        return (*METRIC_NAMES, *self.definitions, *self.sources)

    def check(self, name: str, where: str) -> str:
        """`name` if known; else one ConfigError line naming `where` and the choices."""
        if name not in self.names:
            raise ConfigError(
                f"{where}: unknown metric {name!r}; choose one of: {', '.join(self.names)}, "
                f"or define it in a [metrics.{name}] table"
            )
        return name

    def source_of(self, name: str) -> str:
        """`log`, `cl2`, `prometheus` or `process`."""
        found = self.sources.get(name)
        return "log" if found is None else found.source

    def source_metric(self, name: str) -> SourceMetric | None:
        """The definition of a metric read from beside the log; None for a log metric."""
        return self.sources.get(name)

    def worse(self, name: str) -> Worse:
        """Which way `name` gets worse: every log metric is a count or a lag ("higher")."""
        found = self.sources.get(name)
        return "higher" if found is None else found.worse

    def watchable(self, name: str) -> bool:
        """Whether a look at the growing log can end a warmup early on `name`: a log metric
        that only grows during a run, and grows in its bad direction (counts, a high-water
        mark, a largest lag; user request counts). Never a quantile, a throughput or a
        metric read from beside the log (which no look at the log shows)."""
        if name in self.sources:
            return False
        return name in MONOTONE_METRICS or name in self.definitions

    def growing_scorer(self) -> GrowingScorerFactory:
        """A fresh incremental scorer per evaluation, for checks during the warmup."""
        definitions = self.definitions
        return lambda: _growing(definitions)

    def scorer(self, metric: str | None = None) -> Scorer:
        """score_logs, knowing the user-defined request counts; for a `metric` read from
        beside the log, a SourceScorer that the evaluation binds to its log directory."""
        from bisector.metrics.scoring import SourceScorer  # (reads evidence: not for score)

        logs: Scorer = score_logs
        if self.definitions:
            logs = functools.partial(score_logs, extra_metrics=self.definitions)
        source = None if metric is None else self.sources.get(metric)
        return logs if source is None else SourceScorer(logs, source)


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
