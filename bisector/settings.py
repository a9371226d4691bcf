"""The settings of one bisection, read once from the config file with CLI flags on top.

`RunSettings.from_config` is the only reader of the `[run]` and `[search]` tables; the
backend's own table travels as its `Section` (the backend reads it), the metrics as
the registry. Flags arrive typed (`RunFlags`); a flag left out (None) keeps the file's
value. Errors name the table where the key really is (`nightly.jobs[0].run.backend`
for a nightly job), because every `Section` knows its own path.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.registry import DEFAULT_BACKEND, backend_info
from bisector.config import Section
from bisector.errors import ConfigError
from bisector.metric_registry import DEFAULT_METRIC, MetricRegistry, check_threshold
from bisector.metrics import Worse

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
    "check_every",
    "early_good",
    "prefetch_builds",
    "price_per_cluster_hour",
)
SEARCH_KEYS = (
    "error_rate",
    "likelihood",
    "confidence",
    "max_evaluations",
    "parallel",
    "endpoint_runs",
)
LIKELIHOODS = ("verdict", "metric")
# Upper bounds of the counts: each is far past any real use (a run per commit or a slot is
# a cluster), and a value past them is a typo that would launch clusters without end
# (`--repeats 100000000000000000000` or `--parallel` as large hung before the first one).
MAX_RUNS = 100  # repeats, endpoint runs, launch attempts
MAX_SLOTS = 64  # parallel slots, builds ahead
MAX_EVALUATIONS = 100_000


@dataclass(frozen=True)
class RunFlags:
    """`bisector run`'s flags; None: not given on the command line (the file decides)."""

    backend: str | None = None
    metric: str | None = None
    threshold: float | None = None
    warmup: str | None = None
    repeats: int | None = None
    first_parent: bool | None = None
    launch_attempts: int | None = None
    upload: str | None = None
    paths: tuple[str, ...] | None = None
    error_rate: float | None = None
    likelihood: str | None = None
    parallel: int | None = None
    max_evaluations: int | None = None

    def run_table(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "metric": self.metric,
            "threshold": self.threshold,
            "warmup": self.warmup,
            "repeats": self.repeats,
            "first_parent": self.first_parent,
            "launch_attempts": self.launch_attempts,
            "upload": self.upload,
            "paths": list(self.paths) if self.paths else None,
        }

    def search_table(self) -> dict[str, object]:
        return {
            "error_rate": self.error_rate,
            "likelihood": self.likelihood,
            "parallel": self.parallel,
            "max_evaluations": self.max_evaluations,
        }


@dataclass(frozen=True)
class SearchSettings:
    error_rate: float = 0.0  # per-run verdict error; 0 with likelihood "verdict": plain git bisect
    likelihood: str = "verdict"  # or "metric": evidence from the endpoints' fitted samples
    confidence: float = 0.99  # posterior mass that ends the search
    max_evaluations: int | None = None  # budget for endpoints + search (None: automatic)
    parallel: int = 1  # backend slots evaluating candidates at once
    endpoint_runs: int | None = None  # runs per endpoint (None: repeats, 3 for "metric")
    # Idle slots measure ahead: search points beside the endpoints, the likely culprit's
    # confirmation beside the last search runs. False only for the benchmark's baseline.
    measure_ahead: bool = True

    @property
    def noise_aware(self) -> bool:
        """Probabilistic bisection instead of plain git bisect verdicts."""
        return self.error_rate > 0 or self.likelihood == "metric"

    @classmethod
    def from_section(cls, search: Section) -> SearchSettings:
        search.check_keys(SEARCH_KEYS)

        def bad(key: str, what: str, got: object) -> ConfigError:
            return ConfigError(f"{search.where(key)} must be {what}, got {got!r}")

        error_rate = search.get_float("error_rate", 0.0)
        if not 0 <= error_rate < 0.5:
            raise bad(
                "error_rate",
                "at least 0 and below 0.5 (a run's chance of a wrong verdict)",
                error_rate,
            )
        likelihood = search.get_str("likelihood", "verdict")
        if likelihood not in LIKELIHOODS:
            raise bad("likelihood", "one of " + ", ".join(LIKELIHOODS), likelihood)
        confidence = search.get_float("confidence", 0.99)
        if not 0.5 < confidence < 1:
            raise bad("confidence", "between 0.5 and 1 (e.g. 0.99)", confidence)
        budget = search.get_int("max_evaluations", 0, high=MAX_EVALUATIONS)
        if budget < 0:
            raise bad("max_evaluations", "0 (automatic) or a positive number", budget)
        parallel = search.get_int("parallel", 1, high=MAX_SLOTS)
        if parallel < 1:
            raise bad("parallel", "at least 1 (backend slots at once)", parallel)
        endpoint_runs = search.get_int("endpoint_runs", 0, high=MAX_RUNS)
        if endpoint_runs < 0:
            raise bad("endpoint_runs", "0 (automatic) or a positive number of runs", endpoint_runs)
        return cls(
            error_rate=error_rate,
            likelihood=likelihood,
            confidence=confidence,
            max_evaluations=budget or None,
            parallel=parallel,
            endpoint_runs=endpoint_runs or None,
        )


@dataclass(frozen=True)
class RunSettings:
    good: str
    bad: str
    repo: Path = Path()
    backend: str = DEFAULT_BACKEND
    backend_section: Section = field(default_factory=Section)  # `[backends.<backend>]`
    metrics: MetricRegistry = field(default_factory=MetricRegistry)
    metric: str = DEFAULT_METRIC
    threshold: float | None = None
    warmup_s: float = 0.0
    repeats: int = 1
    first_parent: bool = False
    paths: tuple[str, ...] = ()
    launch_attempts: int = 3
    retry_wait_s: float = 0.0
    estimate_s: float | None = None  # wall time of one evaluation, for --dry-run and ETAs
    check_every_s: float | None = None  # read the log so far this often during the warmup
    early_good: bool = False  # search runs may also end early as good (needs check_every)
    prefetch_builds: int = 0  # builds of likely next candidates while a cluster warms up
    price_per_cluster_hour: float | None = None  # money in the cost model, when given
    seed: int = 0
    run_dir: Path | None = None
    resume_command: str = ""
    upload: str | None = None  # gs://bucket/prefix the run's logs and reports are copied to
    search: SearchSettings = field(default_factory=SearchSettings)
    config_file: str = "<defaults>"

    @property
    def noise_aware(self) -> bool:
        return self.search.noise_aware

    @property
    def worse(self) -> Worse:
        """Which way the metric gets worse: every verdict's comparison follows it."""
        return self.metrics.worse(self.metric)

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
        flags: RunFlags | None = None,
    ) -> RunSettings:
        """Read `[run]`, `[search]`, `[metrics]`, `[backends.<name>]`; flags win over the file."""
        flags = flags or RunFlags()
        run = config.table("run").with_overrides(flags.run_table())
        run.check_keys(RUN_KEYS)
        search = SearchSettings.from_section(
            config.table("search").with_overrides(flags.search_table())
        )
        repeats = run.get_int("repeats", 1, low=1, high=MAX_RUNS)
        attempts = run.get_int("launch_attempts", 3, low=1, high=MAX_RUNS)
        backend = run.get_str("backend", DEFAULT_BACKEND)
        try:
            backend_info(backend)
        except ConfigError as exc:
            raise ConfigError(f"{run.where('backend')}: {exc}") from None
        metrics = MetricRegistry.from_config(config)
        metric = metrics.check(run.get_str("metric", DEFAULT_METRIC), run.where("metric"))
        threshold = check_threshold(run.opt_float("threshold"), run.where("threshold"))
        upload = run.opt_str("upload")
        if upload is not None and not upload.startswith("gs://"):
            raise ConfigError(f"{run.where('upload')}: expected gs://bucket/prefix")
        check_every = (
            run.get_duration("check_every", positive=True) if "check_every" in run else None
        )
        early_good = run.get_bool("early_good", False)
        if early_good and check_every is None:
            raise ConfigError(
                f"{run.where('early_good')} needs {run.where('check_every')}: the log is "
                "looked at during the warmup only that often"
            )
        prefetch = run.get_int("prefetch_builds", 0, low=0, high=MAX_SLOTS)
        price = run.opt_float("price_per_cluster_hour")
        if price is not None and price < 0:
            raise ConfigError(
                f"{run.where('price_per_cluster_hour')} must be 0 or more, got {price}"
            )
        return cls(
            good=good,
            bad=bad,
            repo=repo,
            backend=backend,
            backend_section=config.table("backends").table(backend),
            metrics=metrics,
            metric=metric,
            threshold=threshold,
            warmup_s=run.get_duration("warmup", backend_info(backend).default_warmup_s),
            repeats=repeats,
            first_parent=run.get_bool("first_parent", False),
            paths=tuple(run.get_str_list("paths", [])),
            launch_attempts=attempts,
            retry_wait_s=run.get_duration("retry_wait", 0),
            estimate_s=run.get_duration("estimate", positive=True) if "estimate" in run else None,
            check_every_s=check_every,
            early_good=early_good,
            prefetch_builds=prefetch,
            price_per_cluster_hour=price,
            seed=run.get_int("seed", 0),
            run_dir=run_dir,
            resume_command=resume_command,
            upload=upload,
            search=search,
            config_file=config.file,
        )

    def fingerprint(self) -> str:
        """What a measurement depends on: backend and its settings, metric, warmup."""
        blob = {
            "backend": self.backend,
            "backend_config": self.backend_section.fingerprint(),
            "metric": self.metric,
            "metrics": self.metrics.fingerprint,
            "warmup_s": self.warmup_s,
            "seed": self.seed,
        }
        raw = json.dumps(blob, sort_keys=True).encode()
        return hashlib.sha256(raw).hexdigest()[:16]

    def question(self) -> str:
        """What makes two runs the same bisection (their run directory is shared)."""
        key = [
            self.fingerprint(),
            self.metric,
            self.threshold,
            self.first_parent,
            list(self.paths),
            self.repeats,
            # A differently searched run is another run: its report must not mix with this.
            self.search.error_rate,
            self.search.likelihood,
            self.search.confidence,
            self.search.parallel,
            self.search.max_evaluations,
            self.search.endpoint_runs,
        ]
        return json.dumps(key, default=str)
