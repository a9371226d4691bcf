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

from bisector.backends.registry import BACKENDS, DEFAULT_BACKEND, backend_info
from bisector.config import Section, keys_of, read_settings, setting
from bisector.errors import ConfigError
from bisector.metric_registry import DEFAULT_METRIC, MetricRegistry, check_threshold
from bisector.metrics import Worse

TABLES = ("run", "search", "metrics", "backends")  # a run's config file
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
    """`[search]`: every key declared once (bisector.config.setting)."""

    error_rate: float = setting(
        "float",
        0.0,
        "per-run verdict error; 0 with likelihood verdict: plain git bisect",
        low=0,
        below=0.5,
        why="a run's chance of a wrong verdict",
    )
    likelihood: str = setting(
        "str", "verdict", "or metric: evidence from the endpoints' fitted samples",
        choices=LIKELIHOODS,
    )  # fmt: skip
    confidence: float = setting(
        "float", 0.99, "posterior mass that ends the search", above=0.5, below=1,
        why="a posterior probability, e.g. 0.99",
    )  # fmt: skip
    max_evaluations: int | None = setting(
        "int", 0, "budget for endpoints + search (0: automatic)", low=0,
        high=MAX_EVALUATIONS, automatic=0,
    )  # fmt: skip
    parallel: int = setting(
        "int", 1, "backend slots evaluating candidates at once", low=1, high=MAX_SLOTS,
        why="each slot is a cluster",
    )  # fmt: skip
    endpoint_runs: int | None = setting(
        "int", 0, "runs per endpoint (0: repeats, 3 for metric)", low=0, high=MAX_RUNS,
        automatic=0,
    )  # fmt: skip
    # Idle slots measure ahead: search points beside the endpoints, the likely culprit's
    # confirmation beside the last search runs. False only for the benchmark's baseline.
    measure_ahead: bool = True

    @property
    def noise_aware(self) -> bool:
        """Probabilistic bisection instead of plain git bisect verdicts."""
        return self.error_rate > 0 or self.likelihood == "metric"

    @classmethod
    def from_section(cls, search: Section) -> SearchSettings:
        return read_settings(cls, search)


SEARCH_KEYS = keys_of(SearchSettings)


@dataclass(frozen=True)
class RunTable:
    """`[run]` as written (flags on top): every key declared once; `RunSettings` adds
    what depends on other tables (the backend's, the metrics')."""

    backend: str = setting("str", DEFAULT_BACKEND, "which backend evaluates candidates")
    metric: str = setting("str", DEFAULT_METRIC, "the metric that got worse")
    threshold: float | None = setting("float", None, "bad from this value on")
    warmup: float = setting("duration", 0, "how long a cluster runs before collect", low=0)
    repeats: int = setting(
        "int", 1, "runs per commit", low=1, high=MAX_RUNS, why="each run is a cluster"
    )
    first_parent: bool = setting("bool", False, "search the first-parent line")
    paths: tuple[str, ...] = setting("str_list", (), "only commits touching these paths")
    launch_attempts: int = setting(
        "int", 3, "launches before a skip", low=1, high=MAX_RUNS, why="each is a cluster"
    )
    retry_wait: float = setting("duration", 0, "wait between launch attempts", low=0)
    estimate: float | None = setting(
        "duration", None, "one evaluation's wall time, for --dry-run and ETAs", above=0
    )
    seed: int = setting("int", 0, "seed of the simulator and the search's tie-breaks")
    upload: str | None = setting("str", None, "gs://bucket/prefix the run is copied to")
    check_every: float | None = setting(
        "duration", None, "read the log this often during the warmup", above=0
    )
    early_good: bool = setting("bool", False, "runs may end early as good (needs check_every)")
    prefetch_builds: int = setting(
        "int", 0, "builds ahead while a cluster warms up", low=0, high=MAX_SLOTS
    )
    price_per_cluster_hour: float | None = setting("float", None, "money in the cost model", low=0)


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
        # A misspelt table ([serch], [backend.sim]) would leave its keys unread.
        config.check_tables(TABLES)
        config.table("backends").check_tables(BACKENDS)
        run = config.table("run").with_overrides(flags.run_table())
        table = read_settings(RunTable, run)
        search = SearchSettings.from_section(
            config.table("search").with_overrides(flags.search_table())
        )
        try:
            backend_info(table.backend)
        except ConfigError as exc:
            raise ConfigError(f"{run.where('backend')}: {exc}") from None
        metrics = MetricRegistry.from_config(config)
        metric = metrics.check(table.metric, run.where("metric"))
        threshold = check_threshold(table.threshold, run.where("threshold"))
        if table.upload is not None and not table.upload.startswith("gs://"):
            raise ConfigError(f"{run.where('upload')}: expected gs://bucket/prefix")
        if any(not path.strip() for path in table.paths):
            # git refuses "" as a pathspec, but only once the run directory was made.
            raise ConfigError(
                f"{run.where('paths')}: an empty path matches nothing git accepts; remove it "
                f"(no paths: every commit), got {list(table.paths)!r}"
            )
        if table.early_good and table.check_every is None:
            raise ConfigError(
                f"{run.where('early_good')} needs {run.where('check_every')}: the log is "
                "looked at during the warmup only that often"
            )
        return cls(
            good=good,
            bad=bad,
            repo=repo,
            backend=table.backend,
            backend_section=config.table("backends").table(table.backend),
            metrics=metrics,
            metric=metric,
            threshold=threshold,
            # a backend may say how long its clusters run when [run] does not (the sim: 5m)
            warmup_s=table.warmup
            if "warmup" in run
            else backend_info(table.backend).default_warmup_s,
            repeats=table.repeats,
            first_parent=table.first_parent,
            paths=table.paths,
            launch_attempts=table.launch_attempts,
            retry_wait_s=table.retry_wait,
            estimate_s=table.estimate,
            check_every_s=table.check_every,
            early_good=table.early_good,
            prefetch_builds=table.prefetch_builds,
            price_per_cluster_hour=table.price_per_cluster_hour,
            seed=table.seed,
            run_dir=run_dir,
            resume_command=resume_command,
            upload=table.upload,
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
