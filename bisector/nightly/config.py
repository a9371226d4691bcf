"""`bisector nightly` configuration: where state lives, and the CI jobs to watch.

    [nightly]
    state = "/var/lib/bisector"     # database, lock, hunts' run dirs (relative: to this file)
    reports = "/var/lib/bisector/reports"
    upload = "gs://my-bucket/bisector"   # optional: reports are copied there too
    window = 40                     # latest runs the change point looks at

    [[nightly.jobs]]
    job = "ci-kubernetes-kubemark-gce-scale"
    bucket = "kubernetes-ci-logs"
    metric = "conflicts"            # a log or cl2 metric (what CI builds keep; docs/nightly.md)
    threshold = 50000               # optional: else the change point places it
    repo = "/src/kubernetes"        # a checkout the bisection may use (never touched)
    budget = { evaluations = 12, cluster_hours = 8 }
    [nightly.jobs.run]              # the bisection's `[run]` table (backend, warmup, ...)
    backend = "gce"
    [nightly.jobs.backends.gce]     # and its backend's table
    ...

A job without a `run` table has no backend: its regressions are reported, not bisected.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from bisector.ci.runs import DEFAULT_BUCKET
from bisector.ci.scoring import ci_source_problem
from bisector.config import Section, load_config
from bisector.errors import ConfigError
from bisector.metric_registry import DEFAULT_METRIC, MetricRegistry, check_threshold
from bisector.settings import MAX_EVALUATIONS

NIGHTLY_KEYS = ("state", "database", "reports", "upload", "window", "jobs")
JOB_KEYS = (
    "name",
    "job",
    "bucket",
    "metric",
    "threshold",
    "repo",
    "budget",
    "min_bad_runs",
    "master",
    "run",
    "backends",
    "metrics",
)
BUDGET_KEYS = ("evaluations", "cluster_hours")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Budget:
    evaluations: int | None = None  # backend evaluations per hunt (over all nights)
    cluster_hours: float | None = None  # hours clusters were up, launch to teardown

    def describe(self) -> str:
        parts = []
        if self.evaluations is not None:
            parts.append(f"{self.evaluations} evaluations")
        if self.cluster_hours is not None:
            parts.append(f"{self.cluster_hours:g} cluster-hours")
        return ", ".join(parts) or "unlimited"


@dataclass(frozen=True)
class JobConfig:
    name: str  # key in the database and in report paths
    job: str
    bucket: str
    metric: str
    threshold: float | None
    repo: Path | None
    budget: Budget
    min_bad_runs: int
    master: str | None
    bisect_config: Section | None  # run/backends/metrics tables for run_bisection; None: none
    where: str  # "FILE: [[nightly.jobs]] #N" for messages
    metrics: MetricRegistry = field(default_factory=MetricRegistry)  # built-ins + the job's own


@dataclass(frozen=True)
class NightlyConfig:
    file: Path
    state_dir: Path
    database: Path
    reports_dir: Path
    upload: str | None
    window: int
    jobs: tuple[JobConfig, ...]


def _path(base: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path)


def load_nightly_config(path: Path) -> NightlyConfig:
    root = load_config(path)
    base = Path(path).resolve().parent
    nightly = root.table("nightly")
    if "nightly" not in root:
        raise ConfigError(
            f"{path}: key `nightly` is missing; expected a [nightly] table"
            + Section(file=str(path)).hint("nightly")
        )
    nightly.check_keys(NIGHTLY_KEYS)
    state = _path(base, nightly.get_str("state", "nightly-state"))
    database = _path(state, nightly.get_str("database", "nightly.db"))
    reports = _path(base, nightly.opt_str("reports") or str(state / "reports"))
    upload = nightly.opt_str("upload")
    if upload is not None and not upload.startswith("gs://"):
        raise ConfigError(f"{path}: key `nightly.upload`: expected gs://BUCKET/PREFIX")
    window = nightly.get_int("window", 40)
    if window < 3:
        raise ConfigError(f"{path}: key `nightly.window` must be at least 3, got {window}")
    raw_jobs = nightly.data.get("jobs")
    if not isinstance(raw_jobs, list) or not raw_jobs:
        raise ConfigError(
            f"{path}: key `nightly.jobs` is missing; add a [[nightly.jobs]] table"
            + nightly.hint("jobs")
        )
    jobs = tuple(_job(path, base, k, raw) for k, raw in enumerate(raw_jobs))
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: key `nightly.jobs.name`: two jobs share a name; rename one")
    return NightlyConfig(Path(path), state, database, reports, upload, window, jobs)


def _job(path: Path, base: Path, index: int, raw: object) -> JobConfig:
    where = f"nightly.jobs[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: key `{where}`: expected a table")
    job = Section(raw, str(path), where)
    job.check_keys(JOB_KEYS)
    name = job.get_str("name", job.get_str("job"))
    if not _NAME.match(name):
        raise ConfigError(f"{path}: key `{where}.name`: {name!r} must be letters, digits, .-_")
    metrics = MetricRegistry.from_config(job)
    metric = metrics.check(job.get_str("metric", DEFAULT_METRIC), job.where("metric"))
    if (why := ci_source_problem(metrics, metric)) is not None:
        # The series is read from CI builds as `bisector history` reads it: their logs, or
        # a CL2 job's summaries in artifacts/ (nightly/series.py).
        raise ConfigError(f"{job.where('metric')}: {why}")
    budget_table = job.table("budget")
    budget_table.check_keys(BUDGET_KEYS)
    evaluations = (
        budget_table.get_int("evaluations", high=MAX_EVALUATIONS)
        if "evaluations" in budget_table
        else None
    )
    hours = budget_table.opt_float("cluster_hours")
    if evaluations is not None and evaluations < 1:
        raise ConfigError(f"{path}: key `{where}.budget.evaluations` must be at least 1")
    if hours is not None and (hours <= 0 or not math.isfinite(hours)):
        raise ConfigError(f"{path}: key `{where}.budget.cluster_hours` must be positive")
    min_bad = job.get_int("min_bad_runs", 2)
    if min_bad < 2:
        raise ConfigError(f"{path}: key `{where}.min_bad_runs` must be at least 2")
    threshold = check_threshold(job.opt_float("threshold"), job.where("threshold"))
    repo_text = job.opt_str("repo")
    bisect_config = None
    if "run" in job:
        if repo_text is None:
            raise ConfigError(
                f"{path}: key `{where}.repo` is missing; the bisection needs one" + job.hint("repo")
            )
        tables = {k: raw[k] for k in ("run", "backends", "metrics") if k in raw}
        bisect_config = Section(tables, str(path), where)
        bisect_config.table("run")  # type check now, not at 3 a.m. after scoring
    return JobConfig(
        name=name,
        job=job.get_str("job"),
        bucket=job.get_str("bucket", DEFAULT_BUCKET),
        metric=metric,
        metrics=metrics,
        threshold=threshold,
        repo=_path(base, repo_text) if repo_text else None,
        budget=Budget(evaluations, hours),
        min_bad_runs=min_bad,
        master=job.opt_str("master"),
        bisect_config=bisect_config,
        where=f"{path}: {where}",
    )
