"""Everything one bisection needs, read from the config file with CLI flags on top."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.registry import BACKENDS
from bisector.config import Section
from bisector.errors import ConfigError

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
)


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
        run = config.table("run").with_overrides(overrides or {})
        run.check_keys(RUN_KEYS)
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
        return cls(
            good=good,
            bad=bad,
            repo=repo,
            config=config,
            backend=backend,
            metric=run.get_str("metric", "conflicts"),
            threshold=run.opt_float("threshold"),
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
