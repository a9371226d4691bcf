"""What an evaluation run elsewhere is given: one JSON document, `EvaluationSpec`.

`bisector evaluate` (bisector.executors.pod) reads it wherever it runs (a Job's pod):
the commit and where to fetch it, the run's settings as a config document (`[run]`,
the backend's table and `[metrics]` as the driving process read them, its flags
included), and the evaluation's own settings (phase, launch attempts, what its log
must cover, how its warmup is watched). From it, the pod makes the same `RunSettings`,
the same backend and the same `EvaluationSettings` the driving process would have
used, and runs the same `evaluate_candidate`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from bisector.backends.registry import backend_info
from bisector.config import Section
from bisector.errors import BisectorError, ConfigError
from bisector.executors import handback
from bisector.measure.early import EarlyStop
from bisector.measure.evaluation import EvaluationSettings
from bisector.measure.provenance import LogSeen, WindowRule
from bisector.settings import RunSettings

SPEC_VERSION = 1
SPEC_ENV = "BISECTOR_EVALUATION"  # the environment variable a pod finds its spec in


@dataclass(frozen=True)
class WindowSpec:
    """`WindowRule` as data (its `earlier` logs read when the spec was made)."""

    expected_s: float = 0.0
    real_time: bool = False
    times_required: bool = False
    own_logs: bool = False
    by_run: bool = True
    earlier: tuple[LogSeen, ...] = ()

    @classmethod
    def of(cls, rule: WindowRule) -> WindowSpec:
        return cls(
            rule.expected_s,
            rule.real_time,
            rule.times_required,
            rule.own_logs,
            rule.by_run,
            tuple(rule.earlier()),
        )

    def rule(self) -> WindowRule:
        earlier = self.earlier
        return WindowRule(
            self.expected_s,
            self.real_time,
            self.times_required,
            self.own_logs,
            self.by_run,
            earlier=lambda: earlier,
        )


@dataclass(frozen=True)
class EarlySpec:
    """`EarlyStop` as data: its growing scorers are the metric's, made again from the
    run's `[metrics]` where the evaluation runs."""

    metric: str
    threshold: float | None
    every_s: float
    warmup_s: float
    good_after_s: float | None = None
    onset_s: float | None = None

    @classmethod
    def of(cls, early: EarlyStop) -> EarlySpec:
        return cls(
            early.metric,
            early.threshold,
            early.every_s,
            early.warmup_s,
            early.good_after_s,
            early.onset_s,
        )


@dataclass(frozen=True)
class EvaluationSpec:
    """One evaluation of one commit, as `bisector evaluate` runs it."""

    commit: str
    tree: str
    git_url: str
    config: dict[str, Any]  # `[run]`, `[backends.NAME]`, `[metrics]`: see `run_config`
    config_file: str = "<defaults>"  # the file the driving process read, for messages
    fetch_depth: int = 1  # 0: the whole history
    revisions: tuple[str, ...] = ()  # fetched beside the commit: what the backend checks out
    phase: str = "bisect"
    why: str = ""
    name: str = ""  # the evaluation's name (its directory, and its results' name in a store)
    launch_id: str = ""
    launch_attempts: int = 1
    retry_wait_s: float = 0.0
    window: WindowSpec = field(default_factory=WindowSpec)
    early: EarlySpec | None = None
    artifacts: str = "pod-log"  # how the results come back (bisector.executors.handback)
    version: int = SPEC_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EvaluationSpec:
        """The spec in `text`; one ConfigError line when it is not one."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            if data.get("version") != SPEC_VERSION:
                raise ValueError(
                    f"version {data.get('version')!r}, this bisector reads {SPEC_VERSION}: "
                    "the image and the driving bisector differ"
                )
            window = dict(data.pop("window", {}) or {})
            earlier = tuple(LogSeen(**seen) for seen in window.pop("earlier", ()) or ())
            early = data.pop("early", None)
            spec = cls(
                **{**data, "revisions": tuple(data.get("revisions", ()))},
                window=WindowSpec(**window, earlier=earlier),
                early=None if early is None else EarlySpec(**early),
            )
            spec._check()
            return spec
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"not an evaluation spec: {exc}") from None

    def _check(self) -> None:
        """Each field of the kind it must be, before any fetch or build: a garbled spec
        is bad input, never a skip or a bug after an hour's work."""
        for name, (kind, what) in _KINDS.items():
            value = getattr(self, name)
            # bool is an int in Python; a spec's counts never are true/false
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"`{name}` is {value!r}, not {what}")
        if not all(isinstance(rev, str) for rev in self.revisions):
            raise TypeError(f"`revisions` is {list(self.revisions)!r}, not a list of strings")
        if not self.commit:
            raise ValueError("`commit` is empty")
        if not self.git_url:
            raise ValueError("`git_url` is empty")
        if self.artifacts != handback.POD_LOG:
            try:
                handback.object_name(self.artifacts, self.name)  # gs://BUCKET/PREFIX
            except BisectorError as exc:
                raise ValueError(f"`artifacts`: {exc}") from None

    def run_settings(self) -> RunSettings:
        """The run's settings, read again from the config document (checked as the
        driving process checked them)."""
        section = Section(self.config, self.config_file)
        return RunSettings.from_config(section, good=self.commit, bad=self.commit)

    def evaluation_settings(self, settings: RunSettings) -> EvaluationSettings:
        early = None
        if self.early is not None:
            e = self.early
            early = EarlyStop(
                e.metric,
                e.threshold,
                e.every_s,
                e.warmup_s,
                settings.metrics.growing_scorer(),
                good_after_s=e.good_after_s,
                onset_s=e.onset_s,
            )
        return EvaluationSettings(
            settings.metric,
            phase=self.phase,
            tree=self.tree,
            why=self.why,
            launch_attempts=self.launch_attempts,
            retry_wait_s=self.retry_wait_s,
            scorer=settings.metrics.scorer(settings.metric),
            window=self.window.rule(),
            early=early,
        )


def run_config(settings: RunSettings) -> dict[str, Any]:
    """The run's settings as a config document `RunSettings.from_config` reads back the
    same: the values in effect (flags included), the backend's table and `[metrics]` as
    written. Only what an evaluation depends on: the search's settings stay behind."""
    run: dict[str, Any] = {
        "backend": settings.backend,
        "metric": settings.metric,
        "warmup": settings.warmup_s,
        "seed": settings.seed,
        "launch_attempts": settings.launch_attempts,
        "retry_wait": settings.retry_wait_s,
        "early_good": settings.early_good,
    }
    if settings.check_every_s is not None:
        run["check_every"] = settings.check_every_s
    return {
        "run": run,
        "backends": {settings.backend: dict(settings.backend_section.data)},
        "metrics": dict(settings.metrics_section.data),
    }


def revisions_needed(settings: RunSettings) -> tuple[str, ...]:
    """What the backend checks out beside the candidate (procs: its harness commit)."""
    return backend_info(settings.backend).revisions_needed(settings.backend_section)


# The kind each field of a spec must have: read from JSON, anything can be anywhere (and
# a bool is an int to isinstance, but no field here is true/false).
_KINDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "commit": (str, "a string"),
    "tree": (str, "a string"),
    "git_url": (str, "a string"),
    "config": (dict, "a table"),
    "config_file": (str, "a string"),
    "fetch_depth": (int, "a whole number"),
    "phase": (str, "a string"),
    "why": (str, "a string"),
    "name": (str, "a string"),
    "launch_id": (str, "a string"),
    "launch_attempts": (int, "a whole number"),
    "retry_wait_s": ((int, float), "a number"),
    "artifacts": (str, "a string"),
}
