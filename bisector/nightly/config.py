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

import re
from dataclasses import dataclass, field
from pathlib import Path

from bisector.ci.runs import DEFAULT_BUCKET
from bisector.ci.scoring import ci_source_problem
from bisector.config import Section, load_config, read_settings, setting
from bisector.errors import ConfigError
from bisector.gitrepo import RepoGiven
from bisector.metric_registry import MetricRegistry, check_threshold
from bisector.settings import DEFAULT_METRIC, MAX_EVALUATIONS, RunFlags, check_config

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Budget:
    """`budget = { ... }` of a job: every key declared once (bisector.config.setting)."""

    evaluations: int | None = setting(
        "int", None, "backend evaluations per hunt (over all nights)", low=1,
        high=MAX_EVALUATIONS,
    )  # fmt: skip
    cluster_hours: float | None = setting(
        "float", None, "hours clusters were up, launch to teardown", above=0
    )

    def describe(self) -> str:
        parts = []
        if self.evaluations is not None:
            parts.append(f"{self.evaluations} evaluations")
        if self.cluster_hours is not None:
            parts.append(f"{self.cluster_hours:g} cluster-hours")
        return ", ".join(parts) or "unlimited"


def _raw(s: Section, key: str) -> object:
    """The value as written: `jobs` is checked where the jobs are read."""
    return s.data.get(key)


@dataclass(frozen=True, kw_only=True)
class NightlyTable:
    """`[nightly]` as written: every key declared once (bisector.config.setting)."""

    state: str = setting("str", "nightly-state", "database, lock, hunts' run dirs")
    database: str = setting("str", "nightly.db", "the database, under state")
    reports: str | None = setting("str", None, "where reports go (default: state/reports)")
    upload: str | None = setting("str", None, "gs://BUCKET/PREFIX reports are copied to")
    window: int = setting(
        "int", 40, "latest runs the change point looks at", low=3,
        why="a change point needs runs on both sides of it",
    )  # fmt: skip
    jobs: object = setting("table", doc="[[nightly.jobs]]: the CI jobs to watch", reader=_raw)


def _job_name(s: Section, key: str) -> str:
    name = s.get_str(key, s.get_str("job"))
    if not _NAME.match(name):
        raise ConfigError(f"{s.where(key)}: {name!r} must be letters, digits, .-_")
    return name


@dataclass(frozen=True, kw_only=True)
class JobTable:
    """`[[nightly.jobs]]` as written: every key declared once (bisector.config.setting)."""

    job: str = setting("str", doc="the CI job's name")
    name: str = setting("str", doc="key in the database and report paths", reader=_job_name)
    bucket: str = setting("str", DEFAULT_BUCKET, "the CI logs' bucket")
    metric: str = setting("str", DEFAULT_METRIC, "the metric watched")
    threshold: float | None = setting("float", None, "else the change point places it")
    repo: str | None = setting("str", None, "a checkout the bisection may use")
    budget: Budget = setting(
        "table",
        doc="evaluations, cluster_hours",
        reader=lambda s, k: read_settings(Budget, s.table(k)),
    )
    min_bad_runs: int = setting(
        "int", 2, "bad CI runs before a hunt", low=2, why="one bad run is noise"
    )
    master: str | None = setting("str", None, "the branch CI builds")
    run: Section = setting("table", doc="the bisection's [run] table")
    backends: Section = setting("table", doc="its backends' tables")
    metrics: Section = setting("table", doc="the job's own metrics")


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
    # Where `repo` was set (FILE: key `nightly.jobs[N].repo`): an error about the checkout
    # names that key, the fix (--repo changes nothing here).
    repo_given: RepoGiven | None = None
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
    root.check_tables(("nightly",))
    table = read_settings(NightlyTable, nightly)
    state = _path(base, table.state)
    database = _path(state, table.database)
    reports = _path(base, table.reports or str(state / "reports"))
    for key, place in (("state", state), ("reports", reports)):
        if place.exists() and not place.is_dir():  # else found by the first night's mkdir
            raise ConfigError(
                f"{nightly.where(key)}: {place} exists and is not a directory; name a "
                "directory (created when absent)"
            )
    upload = table.upload
    if upload is not None and not upload.startswith("gs://"):
        raise ConfigError(f"{nightly.where('upload')}: expected gs://BUCKET/PREFIX")
    window = table.window
    raw_jobs = table.jobs
    if not isinstance(raw_jobs, list) or not raw_jobs:
        raise ConfigError(
            f"{path}: key `nightly.jobs` is missing; add a [[nightly.jobs]] table"
            + nightly.hint("jobs")
        )
    jobs = tuple(_job(path, base, k, raw) for k, raw in enumerate(raw_jobs))
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{nightly.where('jobs')}: two jobs share a name; rename one")
    return NightlyConfig(Path(path), state, database, reports, upload, window, jobs)


def _job(path: Path, base: Path, index: int, raw: object) -> JobConfig:
    where = f"nightly.jobs[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: key `{where}`: expected a table")
    job = Section(raw, str(path), where)
    table = read_settings(JobTable, job)
    metrics = MetricRegistry.from_config(job)
    metric = metrics.check(table.metric, job.where("metric"))
    if (why := ci_source_problem(metrics, metric)) is not None:
        # The series is read from CI builds as `bisector history` reads it: their logs, or
        # a CL2 job's summaries in artifacts/ (nightly/series.py).
        raise ConfigError(f"{job.where('metric')}: {why}")
    threshold = check_threshold(table.threshold, job.where("threshold"))
    bisect_config = None
    if "run" in job:
        if table.repo is None:
            raise job.missing("repo", "a checkout: the bisection needs one")
        tables = {k: raw[k] for k in ("run", "backends", "metrics") if k in raw}
        bisect_config = Section(tables, str(path), where)
        check_config(bisect_config, RunFlags(metric=metric))
    return JobConfig(
        name=table.name,
        job=table.job,
        bucket=table.bucket,
        metric=metric,
        metrics=metrics,
        threshold=threshold,
        repo=_path(base, table.repo) if table.repo else None,
        budget=table.budget,
        min_bad_runs=table.min_bad_runs,
        master=table.master,
        bisect_config=bisect_config,
        where=f"{path}: {where}",
        repo_given=RepoGiven.key(job.where("repo"), table.repo) if table.repo else None,
    )
