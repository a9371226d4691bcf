"""One hunt: bisect a regression's commit range with the job's backend, within its budget.

The run directory is fixed per hunt (`<state>/hunts/<job>-<good>-<bad>`), so a
hunt a crash or reboot cut short is picked up by the next night's
`run_bisection` with the same settings, which resumes from its journal without
repeating a finished measurement. A job whose config changed since asks another
question: its hunt goes on in a directory of its own (`...-<hash of the question>`).
The bisection is set up exactly as `bisector run` sets it up
(bisector.bisection.start), so a job's `run`/`backends` tables mean what they
mean in a `bisector run` config: the gce base cluster comes from the good
endpoint's tree when `base_checkout` is unset, user `[metrics.NAME]` work, and
config errors name the job's own table.

A hunt whose backend cannot measure the job's metric is not started: a cl2 metric
(read from a ClusterLoader2 report) asked of a backend that runs no CL2 (gce's 2017
kubemark, sim, procs; kind without a `workload`) would skip every evaluation and
spend the budget on clusters that answer nothing. It is reported `unbisected` with
the reason (`unmeasurable`), before any build or launch. The bisection measures the
metric itself, at both endpoints first, with its own threshold: the CI runs' values
(another cluster, another scale) only chose the range.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend
from bisector.bisection.pipeline import run_bisection
from bisector.bisection.question import other_question
from bisector.bisection.report_builder import evaluation_of
from bisector.bisection.start import metric_unmeasurable
from bisector.errors import BisectorError, ConfigError
from bisector.gitrepo import GitRepo
from bisector.measure.journal import Measured, ThresholdSet, read_journal
from bisector.nightly.budget import BudgetedBackend, BudgetExceeded, budget_exceeded
from bisector.nightly.config import JobConfig, NightlyConfig
from bisector.nightly.store import Hunt, NightlyStore
from bisector.report.model import Culprit, Evaluation, Report, Threshold
from bisector.settings import RunFlags, RunSettings
from bisector.ui.progress_lines import PlainProgress

FOUND = "found"  # culprit named and confirmed
INCONCLUSIVE = "inconclusive"  # bisected, but no single confirmed culprit
BUDGET = "budget"  # stopped by the budget
UNBISECTED = "unbisected"  # no backend, or a range no bisection can take
FAILED = "failed"  # the bisection stopped on an error (endpoints, backend setup)


@dataclass
class HuntEvidence:
    """What a hunt measured: the full report when it finished, else its journal."""

    run_dir: str | None = None
    threshold: Threshold | None = None
    evaluations: list[Evaluation] = field(default_factory=list)
    culprit: Culprit | None = None
    report: Report | None = None

    @classmethod
    def of_report(cls, report: Report) -> HuntEvidence:
        return cls(report.run_dir, report.threshold, report.evaluations, report.culprit, report)


@dataclass
class HuntResult:
    status: str
    reason: str | None = None
    culprit: str | None = None
    evidence: HuntEvidence = field(default_factory=HuntEvidence)


def hunt_run_dir(cfg: NightlyConfig, job: JobConfig, good: str, bad: str) -> Path:
    slug = f"{job.name}-{good.replace(':', '')[:12]}-{bad.replace(':', '')[:12]}"
    return (cfg.state_dir / "hunts" / slug).resolve()


def run_settings(
    cfg: NightlyConfig, job: JobConfig, good: str, bad: str, run_dir: Path
) -> RunSettings:
    """The bisection's settings: the job's `run`/`backends`/`metrics` tables, its metric,
    first-parent (CI runs test mainline merges: follow them, then descend into the PR)."""
    assert job.bisect_config is not None and job.repo is not None
    first_parent = None if "first_parent" in job.bisect_config.table("run") else True
    return RunSettings.from_config(
        job.bisect_config,
        good=good,
        bad=bad,
        repo=job.repo,
        run_dir=run_dir,
        resume_command=f"bisector nightly --config {cfg.file}",
        flags=RunFlags(metric=job.metric, first_parent=first_parent),
        repo_given=job.repo_given,
    )


def question_dir(run_dir: Path, settings: RunSettings) -> Path:
    """The hunt's run directory for this question: `run_dir`, unless it holds the run of
    another one (the job's config changed since: another metric, threshold, backend
    config), then a directory of the new question's own beside it (the earlier one is
    left as it is: one run directory answers one question)."""
    records = read_journal(run_dir / "journal.jsonl")
    try:
        repo = GitRepo(settings.repo, given=settings.repo_given)
        good, bad = repo.resolve(settings.good), repo.resolve(settings.bad)
    except BisectorError:
        return run_dir  # the bisection says what is wrong with the range
    if other_question(records, settings, good, bad) is None:
        return run_dir
    digest = hashlib.sha256(settings.question().encode()).hexdigest()[:8]
    return run_dir.with_name(f"{run_dir.name}-{digest}")


def unmeasurable(settings: RunSettings) -> str | None:
    """Why the bisection's backend cannot give its metric (None: it can), one line."""
    why = metric_unmeasurable(settings)
    if why is None:
        return None
    return (
        f"{why}; set a workload that runs ClusterLoader2 (docs/nightly.md), or drop the "
        "job's run table to report only"
    )


def bisect_hunt(cfg: NightlyConfig, job: JobConfig, store: NightlyStore, hunt: Hunt) -> HuntResult:
    settings = run_settings(cfg, job, hunt.good_commit, hunt.bad_commit, hunt.run_dir)
    if (why := unmeasurable(settings)) is not None:
        return HuntResult(UNBISECTED, why)  # nothing built, launched or measured
    run_dir = question_dir(hunt.run_dir, settings)
    if run_dir != hunt.run_dir:
        PlainProgress().note(
            f"{job.name}: the job's config changed since the hunt began in {hunt.run_dir}: "
            f"hunting in {run_dir} (the earlier directory is kept; if it has a cluster left "
            f"up: bisector cleanup --run-dir {hunt.run_dir})"
        )
        store.update_hunt(hunt.id, run_dir=str(run_dir))
        settings = dataclasses.replace(settings, run_dir=run_dir)
    evaluations, cluster_s = store.usage(hunt.id)

    def record(more_evaluations: int, more_cluster_s: float) -> None:
        store.add_usage(hunt.id, evaluations=more_evaluations, cluster_s=more_cluster_s)

    def within_budget(backend: Backend) -> Backend:
        return BudgetedBackend(
            backend, job.budget, evaluations=evaluations, cluster_s=cluster_s, record=record
        )

    if (why := budget_exceeded(job.budget, evaluations, cluster_s)) is not None:
        return HuntResult(BUDGET, why, evidence=journal_evidence(run_dir))
    try:
        report = run_bisection(settings, wrap_backend=within_budget, progress=PlainProgress())
    except BudgetExceeded as exc:
        return HuntResult(BUDGET, exc.reason, evidence=journal_evidence(run_dir))
    except ConfigError:
        raise  # the user must fix the file; the hunt stays open for the next night
    except BisectorError as exc:
        return HuntResult(FAILED, str(exc), evidence=journal_evidence(run_dir))
    evidence = HuntEvidence.of_report(report)
    culprit = report.culprit
    if culprit is None:
        return HuntResult(INCONCLUSIVE, "only unmeasurable commits are left", None, evidence)
    if not culprit.confirmed:
        reason = "; ".join(culprit.unconfirmed) or (
            "re-measuring the culprit and its parent did not confirm it"
        )
        return HuntResult(INCONCLUSIVE, reason, culprit.commit, evidence)
    return HuntResult(FOUND, None, culprit.commit, evidence)


def journal_evidence(run_dir: Path) -> HuntEvidence:
    """What a bisection stopped early measured: its report, else its journal, in order."""
    report = run_dir / "report.json"
    if report.is_file():
        return HuntEvidence.of_report(Report.read(report))
    records = read_journal(run_dir / "journal.jsonl")
    threshold = None
    evaluations: list[Evaluation] = []
    for record in records:
        if isinstance(record, ThresholdSet):
            threshold = Threshold(record.value, record.how)
        if isinstance(record, Measured):
            value = threshold.value if threshold else None
            evaluations.append(
                evaluation_of(len(evaluations) + 1, record.measurement, "", value, cached=False)
            )
    return HuntEvidence(str(run_dir), threshold, evaluations)
