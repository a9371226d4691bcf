"""Everything one bisection needs, read from the config file with CLI flags on top."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from bisector.backends.registry import BACKENDS
from bisector.config import Section
from bisector.errors import ConfigError
from bisector.logs import METRIC_NAMES, load_metric_definitions, score_logs
from bisector.search.measure import Scorer

RUN_KEYS = (
    "backend",
    "metric",
    "threshold",
    "warmup",
    "repeats",
    "first_parent",
    "paths",
    "launch_attempts",
    "retry_wait",
    "estimate",
    "seed",
    "upload",
)
# `[search]`: how the culprit is searched for (noise model, parallel slots, budget).
SEARCH_KEYS = (
    "error_rate",
    "likelihood",
    "confidence",
    "max_evaluations",
    "parallel",
    "endpoint_runs",
)
LIKELIHOODS = ("verdict", "metric")


@dataclass(frozen=True)
class RunOptions:
    good: str
    bad: str
    repo: Path = Path()
    config: Section = field(default_factory=Section)  # the whole file, for backend/metric tables
    backend: str = "sim"
    metric: str = "conflicts"
    threshold: float | None = None
    warmup_s: float = 0.0
    repeats: int = 1
    first_parent: bool = False
    paths: tuple[str, ...] = ()
    launch_attempts: int = 3
    retry_wait_s: float = 0.0
    estimate_s: float | None = None  # wall time of one evaluation, for --dry-run and ETAs
    seed: int = 0
    run_dir: Path | None = None
    resume_command: str = ""
    upload: str | None = None  # gs://bucket/prefix the run directory is copied to
    error_rate: float = 0.0  # per-run verdict error; 0 with likelihood "verdict": plain git bisect
    likelihood: str = "verdict"  # or "metric": evidence from the endpoints' fitted samples
    confidence: float = 0.99  # posterior mass that ends the search
    max_evaluations: int | None = None  # budget for endpoints + search (None: automatic)
    parallel: int = 1  # backend slots evaluating candidates at once
    endpoint_runs: int | None = None  # runs per endpoint (None: repeats, 3 for "metric")
    # Idle slots measure ahead: search points beside the endpoints, the likely culprit's
    # confirmation beside the last search runs. False: the plain rounds (bench baseline).
    fold_rounds: bool = True

    @property
    def noise_aware(self) -> bool:
        """Probabilistic bisection instead of plain git bisect verdicts."""
        return self.error_rate > 0 or self.likelihood == "metric"

    @classmethod
    def from_config(
        cls,
        config: Section,
        *,
        good: str,
        bad: str,
        repo: Path = Path(),
        run_dir: Path | None = None,
        resume_command: str = "",
        overrides: dict[str, object] | None = None,
    ) -> RunOptions:
        """Read `[run]`; `overrides` (CLI flags, None = not given) win over the file."""
        flags = overrides or {}
        run = config.table("run").with_overrides(
            {k: v for k, v in flags.items() if k not in SEARCH_KEYS}
        )
        run.check_keys(RUN_KEYS)
        search = config.table("search").with_overrides(
            {k: v for k, v in flags.items() if k in SEARCH_KEYS}
        )
        search.check_keys(SEARCH_KEYS)
        repeats = run.get_int("repeats", 1)
        if repeats < 1:
            raise ConfigError(f"{run.file}: key `run.repeats` must be at least 1, got {repeats}")
        attempts = run.get_int("launch_attempts", 3)
        if attempts < 1:
            raise ConfigError(
                f"{run.file}: key `run.launch_attempts` must be at least 1, got {attempts}"
            )
        estimate = run.get_duration("estimate") if "estimate" in run else None
        backend = run.get_str("backend", "sim")
        if backend not in BACKENDS:
            known = ", ".join(sorted(BACKENDS)) or "none"
            raise ConfigError(
                f"{run.file}: key `run.backend`: unknown backend {backend!r}; "
                f"choose one of: {known}"
            )
        metric = run.get_str("metric", "conflicts")
        metrics = (*METRIC_NAMES, *load_metric_definitions(config.table("metrics")))
        if metric not in metrics:
            raise ConfigError(
                f"{run.file}: key `run.metric`: unknown metric {metric!r}; choose one of: "
                f"{', '.join(metrics)}, or define it in a [metrics.{metric}] table"
            )
        threshold = run.opt_float("threshold")
        if threshold is not None and not math.isfinite(threshold):
            # nan compares false with every value: each run would read as good.
            raise ConfigError(
                f"{run.file}: key `run.threshold` must be a finite number, got {threshold}"
            )
        upload = run.opt_str("upload")
        if upload is not None and not upload.startswith("gs://"):
            raise ConfigError(f"{run.file}: key `run.upload`: expected gs://bucket/prefix")
        return cls(
            good=good,
            bad=bad,
            repo=repo,
            config=config,
            backend=backend,
            metric=metric,
            threshold=threshold,
            warmup_s=run.get_duration("warmup", 0),
            repeats=repeats,
            first_parent=run.get_bool("first_parent", False),
            paths=tuple(run.get_str_list("paths", [])),
            launch_attempts=attempts,
            retry_wait_s=run.get_duration("retry_wait", 0),
            estimate_s=estimate,
            seed=run.get_int("seed", 0),
            run_dir=run_dir,
            resume_command=resume_command,
            upload=upload,
            **_search_options(search),
        )

    def scorer(self) -> Scorer:
        """score_logs, knowing the config's user-defined `[metrics.NAME]` request counts."""
        definitions = load_metric_definitions(self.config.table("metrics"))
        return (
            functools.partial(score_logs, extra_metrics=definitions) if definitions else score_logs
        )

    def backend_section(self) -> Section:
        return self.config.table("backends").table(self.backend)

    def fingerprint(self) -> str:
        """What a measurement depends on: backend and its settings, metric, warmup."""
        blob = {
            "backend": self.backend,
            "backend_config": self.backend_section().fingerprint(),
            "metric": self.metric,
            "metrics": self.config.table("metrics").fingerprint(),
            "warmup_s": self.warmup_s,
            "seed": self.seed,
        }
        raw = json.dumps(blob, sort_keys=True).encode()
        return hashlib.sha256(raw).hexdigest()[:16]


class _SearchSettings(TypedDict):
    error_rate: float
    likelihood: str
    confidence: float
    max_evaluations: int | None
    parallel: int
    endpoint_runs: int | None


def _search_options(search: Section) -> _SearchSettings:
    def bad(key: str, what: str, got: object) -> ConfigError:
        return ConfigError(f"{search.file}: key `search.{key}` must be {what}, got {got!r}")

    error_rate = search.get_float("error_rate", 0.0)
    if not 0 <= error_rate < 0.5:
        raise bad(
            "error_rate", "at least 0 and below 0.5 (a run's chance of a wrong verdict)", error_rate
        )
    likelihood = search.get_str("likelihood", "verdict")
    if likelihood not in LIKELIHOODS:
        raise bad("likelihood", "one of " + ", ".join(LIKELIHOODS), likelihood)
    confidence = search.get_float("confidence", 0.99)
    if not 0.5 < confidence < 1:
        raise bad("confidence", "between 0.5 and 1 (e.g. 0.99)", confidence)
    budget = search.get_int("max_evaluations", 0)
    if budget < 0:
        raise bad("max_evaluations", "0 (automatic) or a positive number of evaluations", budget)
    parallel = search.get_int("parallel", 1)
    if parallel < 1:
        raise bad("parallel", "at least 1 (backend slots at once)", parallel)
    endpoint_runs = search.get_int("endpoint_runs", 0)
    if endpoint_runs < 0:
        raise bad("endpoint_runs", "0 (automatic) or a positive number of runs", endpoint_runs)
    return {
        "error_rate": error_rate,
        "likelihood": likelihood,
        "confidence": confidence,
        "max_evaluations": budget or None,
        "parallel": parallel,
        "endpoint_runs": endpoint_runs or None,
    }
