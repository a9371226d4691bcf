"""The settings of one bisection, read once from the config file with CLI flags on top.

`RunSettings.from_config` is the only reader of the `[run]` and `[search]` tables; the
backend's own table travels as its `Section` (the backend reads it), the metrics as
the registry. Each key is declared once (`RunTable`, `SearchSettings`): its name, type,
default and doc; a key declared with a `Flag` is also a flag of `bisector run`
(`RUN_FLAGS`, from which the CLI makes its options, the doc being their help), and
`RunSettings`' fields take their defaults from the same declarations. The flags given
(`RunFlags`) lie on top of the file's tables; a flag left out keeps the file's value.
Errors name the table where the key really is (`nightly.jobs[0].run.backend` for a
nightly job), because every `Section` knows its own path. Every backend of a run is
built from `RunSettings.backend_context`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bisector.backends.base import BackendContext
from bisector.backends.registry import BACKENDS, DEFAULT_BACKEND, backend_info, backend_names
from bisector.config import (
    Flag,
    Key,
    Section,
    key_specs,
    keys_of,
    load_config,
    read_settings,
    setting,
)
from bisector.errors import ConfigError
from bisector.gitrepo import RepoGiven

if TYPE_CHECKING:
    # The CLI imports this module for `run`'s flags, and every command starts with the CLI:
    # the registry loads the log scanner (numpy, ~0.5 s), imported when a run reads it.
    from bisector.metric_registry import MetricRegistry
    from bisector.metrics import Worse

DEFAULT_METRIC = "conflicts"  # what run, history and score are about when none is said
# The run directory of a backend built only to check its table (doctor, the run's
# preflight, a nightly job's load): never set up, so nothing is written there.
CHECK_DIR = Path(".bisector-doctor")
TABLES = ("run", "search", "metrics", "backends", "executor")  # a run's config file
# Where each evaluation runs: in this process ("local"), or as a Kubernetes Job whose pod
# runs `bisector evaluate` (bisector.executors.kubernetes, `[executor.kubernetes]`).
EXECUTORS = ("local", "kubernetes")
LOCAL_EXECUTOR = "local"
# The class that reads each other executor's `[executor.<name>]` table, named as the
# backend registry names its modules: the whole config is checked here without this
# layer importing the executors above it.
EXECUTOR_SETTINGS = {"kubernetes": "bisector.executors.kubernetes.settings:KubernetesSettings"}
LIKELIHOODS = ("verdict", "metric")
# Upper bounds of the counts: each is far past any real use (a run per commit or a slot is
# a cluster), and a value past them is a typo that would launch clusters without end
# (`--repeats 100000000000000000000` or `--parallel` as large would hang before the first one).
MAX_RUNS = 100  # repeats, endpoint runs, launch attempts
MAX_SLOTS = 64  # parallel slots, builds ahead
MAX_EVALUATIONS = 100_000
MAX_CULPRITS = 10  # each culprit past the first is a whole search of its own


@dataclass(frozen=True)
class SearchSettings:
    """`[search]`: every key declared once (bisector.config.setting)."""

    # 0 with likelihood verdict: plain git bisect
    error_rate: float = setting(
        "float",
        0.0,
        "Chance a run's verdict is wrong; > 0: noise-aware search.",
        low=0,
        below=0.5,
        why="a run's chance of a wrong verdict",
        flag=Flag("P"),
    )
    likelihood: str = setting(
        "str", "verdict", "verdict (uses --error-rate) or metric (fit to the endpoints' runs).",
        choices=LIKELIHOODS, flag=Flag("MODEL"),
    )  # fmt: skip
    confidence: float = setting(
        "float", 0.99, "posterior mass that ends the search", above=0.5, below=1,
        why="a posterior probability, e.g. 0.99",
    )  # fmt: skip
    parallel: int = setting(
        "int", 1, "Candidates evaluated at once (backend slots).", low=1, high=MAX_SLOTS,
        why="each slot is a cluster", flag=Flag("K"),
    )  # fmt: skip
    max_evaluations: int | None = setting(
        "int", 0, "Budget of a noise-aware search (endpoints included).", low=0,
        high=MAX_EVALUATIONS, automatic=0, flag=Flag("N"),
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

    backend: str = setting(
        "str", DEFAULT_BACKEND, f"Backend: {backend_names()} (default {DEFAULT_BACKEND}).",
        flag=Flag("NAME"),
    )  # fmt: skip
    metric: str = setting("str", DEFAULT_METRIC, "Metric the verdict is about.", flag=Flag("NAME"))
    threshold: float | None = setting(
        "float", None, "Bad at or above this (default: calibrated).", flag=Flag("VALUE")
    )
    # How long a cluster runs before collect.
    warmup: float = setting(
        "duration", 0, "Wait after launch, e.g. 5m.", low=0, flag=Flag("DURATION")
    )
    repeats: int = setting(
        "int", 1, "Runs per commit (majority vote).", low=1, high=MAX_RUNS,
        why="each run is a cluster", flag=Flag("N"),
    )  # fmt: skip
    first_parent: bool = setting("bool", False, "Follow only merges (PRs).", flag=Flag())
    paths: tuple[str, ...] = setting(
        "str_list", (), "Only commits touching these paths.",
        flag=Flag("-- PATH", positional=True),
    )  # fmt: skip
    launch_attempts: int = setting(
        "int", 3, "Launch tries before a commit is skipped.", low=1, high=MAX_RUNS,
        why="each is a cluster", flag=Flag("N"),
    )  # fmt: skip
    retry_wait: float = setting("duration", 0, "wait between launch attempts", low=0)
    estimate: float | None = setting(
        "duration", None, "one evaluation's wall time, for --dry-run and ETAs", above=0
    )
    seed: int = setting("int", 0, "seed of the simulator and the search's tie-breaks")
    upload: str | None = setting(
        "str", None, "gs://bucket/prefix to copy the run's logs and report to.",
        flag=Flag("GS_URL"),
    )  # fmt: skip
    check_every: float | None = setting(
        "duration", None, "read the log this often during the warmup", above=0
    )
    early_good: bool = setting("bool", False, "runs may end early as good (needs check_every)")
    prefetch_builds: int = setting(
        "int", 0, "builds ahead while a cluster warms up", low=0, high=MAX_SLOTS
    )
    price_per_cluster_hour: float | None = setting("float", None, "money in the cost model", low=0)
    executor: str = setting(
        "str", LOCAL_EXECUTOR, "where evaluations run: local or kubernetes ([executor.kubernetes])",
        choices=EXECUTORS,
    )  # fmt: skip
    revert_check: bool = setting(
        "bool", True, "measure the bad endpoint with the culprit reverted; hunt on if still bad"
    )
    max_culprits: int = setting(
        "int", 3, "culprits hunted, each with the ones before reverted", low=1,
        high=MAX_CULPRITS, why="each culprit past the first is a search of its own",
    )  # fmt: skip


@dataclass(frozen=True)
class RunFlag:
    """One flag of `bisector run`: the declared key it sets, and its table."""

    name: str  # the key; the option is `--name-of-key`
    table: str  # "run" or "search"
    key: Key  # its type, default and doc (the flag's help)
    flag: Flag  # its metavar, or positional


def _flags(tables: dict[str, type]) -> dict[str, RunFlag]:
    return {
        name: RunFlag(name, table, key, key.flag)
        for table, cls in tables.items()
        for name, key in key_specs(cls).items()
        if key.flag is not None
    }


# `bisector run`'s flags, in the order its help lists them.
RUN_FLAGS = _flags({"run": RunTable, "search": SearchSettings})


class RunFlags:
    """The values `bisector run`'s flags (RUN_FLAGS) gave, by the key each sets; a flag not
    given (None, or no paths) keeps the file's value. They are read with the file's
    tables, as declared: a wrong value is said as `--flag`, as the user typed it."""

    __slots__ = ("given",)

    def __init__(self, **given: object) -> None:
        unknown = sorted(set(given) - set(RUN_FLAGS))
        if unknown:
            raise TypeError(f"no flag of bisector run sets {', '.join(unknown)}")
        self.given = {
            name: list(value) if isinstance(value, (tuple, list)) else value
            for name, value in given.items()
            if value is not None and value not in ((), [])
        }

    def over(self, table: str, section: Section) -> Section:
        """`section`, the file's `[run]` or `[search]`, with the flags of that table on top."""
        return section.with_overrides(
            {name: v for name, v in self.given.items() if RUN_FLAGS[name].table == table}
        )


def _builtin_metrics() -> MetricRegistry:
    from bisector.metric_registry import MetricRegistry

    return MetricRegistry()


# The fields below that are keys take their defaults from the declarations above.
@dataclass(frozen=True)
class RunSettings:
    """One bisection's settings, typed and checked: what the layers below the CLI read."""

    good: str
    bad: str
    repo: Path = Path()
    backend: str = RunTable.backend
    backend_section: Section = field(default_factory=Section)  # `[backends.<backend>]`
    metrics: MetricRegistry = field(default_factory=_builtin_metrics)
    # `[metrics]` as written: an evaluation run elsewhere (a Job's pod) reads it again.
    metrics_section: Section = field(default_factory=Section)
    executor: str = RunTable.executor
    executor_section: Section = field(default_factory=Section)  # `[executor.<executor>]`
    metric: str = RunTable.metric
    threshold: float | None = RunTable.threshold
    warmup_s: float = RunTable.warmup
    repeats: int = RunTable.repeats
    first_parent: bool = RunTable.first_parent
    paths: tuple[str, ...] = RunTable.paths
    launch_attempts: int = RunTable.launch_attempts
    retry_wait_s: float = RunTable.retry_wait
    estimate_s: float | None = RunTable.estimate  # one evaluation's wall time: --dry-run, ETAs
    check_every_s: float | None = RunTable.check_every  # read the log so far this often
    early_good: bool = RunTable.early_good  # search runs may also end early as good
    prefetch_builds: int = RunTable.prefetch_builds  # builds ahead while a cluster warms up
    price_per_cluster_hour: float | None = RunTable.price_per_cluster_hour  # the cost model's
    # The confirmed culprit reverted on the bad endpoint and measured; further culprits.
    revert_check: bool = RunTable.revert_check
    max_culprits: int = RunTable.max_culprits
    seed: int = RunTable.seed
    run_dir: Path | None = None
    resume_command: str = ""
    upload: str | None = RunTable.upload  # gs://bucket/prefix the run is copied to
    search: SearchSettings = field(default_factory=SearchSettings)
    config_file: str = "<defaults>"
    # How `repo` was given (--repo, the current directory, a config's key): the fix an
    # error about it names. None: said as the path alone.
    repo_given: RepoGiven | None = None

    @property
    def noise_aware(self) -> bool:
        return self.search.noise_aware

    @property
    def worse(self) -> Worse:
        """Which way the metric gets worse: every verdict's comparison follows it."""
        return self.metrics.worse(self.metric)

    @property
    def looks_every_s(self) -> float | None:
        """How often the run looks at the growing log during a warmup: `[run] check_every`,
        for a metric a look can decide (MetricRegistry.watchable); None: it never looks."""
        return self.check_every_s if self.metrics.watchable(self.metric) else None

    def backend_context(
        self, run_dir: Path, *, base_worktree: Path | None = None
    ) -> BackendContext:
        """The context this run's backend is built from: the run's, and the same for
        `doctor`, the run's preflight, `cleanup` and a nightly job's check, so a check of
        the run's settings (procs refuses looks it cannot judge) fires in all of them."""
        return BackendContext(
            self.backend_section,
            run_dir,
            self.warmup_s,
            self.seed,
            base_worktree=base_worktree,
            check_every_s=self.looks_every_s,
        )

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
        repo_given: RepoGiven | None = None,
    ) -> RunSettings:
        """Read `[run]`, `[search]`, `[metrics]`, `[backends.<name>]`; flags win over the file."""
        flags = flags or RunFlags()
        # A misspelt table ([serch], [backend.sim]) would leave its keys unread.
        config.check_tables(TABLES)
        config.table("backends").check_tables(BACKENDS)
        config.table("executor").check_tables(EXECUTORS[1:])
        run = flags.over("run", config.table("run"))
        table = read_settings(RunTable, run)
        search = SearchSettings.from_section(flags.over("search", config.table("search")))
        try:
            backend_info(table.backend)
        except ConfigError as exc:
            raise ConfigError(f"{run.where('backend')}: {exc}") from None
        from bisector.metric_registry import MetricRegistry, check_threshold

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
            metrics_section=config.table("metrics"),
            executor=table.executor,
            executor_section=config.table("executor").table(table.executor),
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
            revert_check=table.revert_check,
            max_culprits=table.max_culprits,
            seed=table.seed,
            run_dir=run_dir,
            resume_command=resume_command,
            upload=table.upload,
            search=search,
            config_file=config.file,
            repo_given=repo_given,
        )

    @property
    def evaluation_estimate_s(self) -> float | None:
        """One evaluation's wall time for the cost model: `[run] estimate`, else the
        backend's own from its table (the sim's); None: unknown."""
        if self.estimate_s is not None:
            return self.estimate_s
        return backend_info(self.backend).estimate_s(self.backend_section, self.warmup_s)

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


def check_config(config: Section, flags: RunFlags | None = None) -> RunSettings:
    """All of a run config checked as `bisector run` checks it before any cluster: its
    tables, [run], [search], [metrics] and the chosen backend's own table (built as the
    run builds it). Every command that reads a run config checks it here, so a misspelt
    key `run` refuses is never silently a default in another command."""
    settings = RunSettings.from_config(config, good="", bad="", flags=flags)
    backend_info(settings.backend).create(settings.backend_context(CHECK_DIR))
    if settings.executor != LOCAL_EXECUTOR:
        module, name = EXECUTOR_SETTINGS[settings.executor].split(":")
        getattr(importlib.import_module(module), name).from_section(settings.executor_section)
    return settings


def read_config(path: Path | None, flags: RunFlags | None = None) -> Section:
    """The run config at `path`, checked whole (None: no --config; the defaults, which
    need no check and cost no backend's import)."""
    if path is None:
        return Section()
    config = load_config(path)
    check_config(config, flags)
    return config
