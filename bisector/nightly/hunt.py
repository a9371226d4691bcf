"""One hunt: bisect a regression's commit range with the job's backend, within its budget.

The run directory is fixed per hunt (`<state>/hunts/<job>-<good>-<bad>`), so a
hunt a crash or reboot cut short is picked up by the next night's
`run_bisection` with the same options, which resumes from its journal without
repeating a finished measurement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.backends.base import BackendContext
from bisector.backends.registry import create_backend
from bisector.errors import BisectorError, ConfigError
from bisector.nightly.budget import BudgetedBackend, BudgetExceeded
from bisector.nightly.config import JobConfig, NightlyConfig
from bisector.nightly.store import Hunt, NightlyStore
from bisector.search import RunOptions, run_bisection
from bisector.search.journal import read_lines
from bisector.search.progress import PlainProgress

FOUND = "found"  # culprit named and confirmed
INCONCLUSIVE = "inconclusive"  # bisected, but no single confirmed culprit
BUDGET = "budget"  # stopped by the budget
UNBISECTED = "unbisected"  # no backend, or a range no bisection can take
FAILED = "failed"  # the bisection stopped on an error (endpoints, backend setup)


@dataclass
class HuntResult:
    status: str
    reason: str | None = None
    culprit: str | None = None
    bisection: dict[str, Any] = field(default_factory=dict)  # the run's report.json, if any


def hunt_run_dir(cfg: NightlyConfig, job: JobConfig, good: str, bad: str) -> Path:
    slug = f"{job.name}-{good.replace(':', '')[:12]}-{bad.replace(':', '')[:12]}"
    return (cfg.state_dir / "hunts" / slug).resolve()


def run_options(cfg: NightlyConfig, job: JobConfig, hunt: Hunt) -> RunOptions:
    """The bisection's options: the job's `run`/`backends` tables, its metric, first-parent."""
    assert job.bisect_config is not None and job.repo is not None
    run_table = job.bisect_config.table("run")
    overrides: dict[str, object] = {
        "metric": job.metric,
        # CI runs test mainline merges: follow them, then descend into the guilty PR.
        "first_parent": None if "first_parent" in run_table else True,
    }
    return RunOptions.from_config(
        job.bisect_config,
        good=hunt.good_commit,
        bad=hunt.bad_commit,
        repo=job.repo,
        run_dir=hunt.run_dir,
        resume_command=f"bisector nightly --config {cfg.file}",
        overrides=overrides,
    )


def bisect_hunt(cfg: NightlyConfig, job: JobConfig, store: NightlyStore, hunt: Hunt) -> HuntResult:
    options = run_options(cfg, job, hunt)
    run_dir = hunt.run_dir
    context = BackendContext(options.backend_section(), run_dir, options.warmup_s, options.seed)
    evaluations, cluster_s = store.usage(hunt.id)

    def record(more_evaluations: int, more_cluster_s: float) -> None:
        store.add_usage(hunt.id, evaluations=more_evaluations, cluster_s=more_cluster_s)

    backend = BudgetedBackend(
        create_backend(options.backend, context),
        job.budget,
        evaluations=evaluations,
        cluster_s=cluster_s,
        record=record,
    )
    if (why := backend.exceeded()) is not None:
        return HuntResult(BUDGET, why, bisection=journal_evidence(run_dir))
    try:
        report = run_bisection(options, backend=backend, progress=PlainProgress())
    except BudgetExceeded as exc:
        return HuntResult(BUDGET, exc.reason, bisection=journal_evidence(run_dir))
    except ConfigError:
        raise  # the user must fix the file; the hunt stays open for the next night
    except BisectorError as exc:
        return HuntResult(FAILED, str(exc), bisection=journal_evidence(run_dir))
    culprit = report.culprit
    if culprit is None:
        return HuntResult(INCONCLUSIVE, "only unmeasurable commits are left", None, report.data)
    if not culprit.get("confirmed"):
        reason = "re-measuring the culprit and its parent did not confirm it"
        return HuntResult(INCONCLUSIVE, reason, culprit["commit"], report.data)
    return HuntResult(FOUND, None, culprit["commit"], report.data)


def journal_evidence(run_dir: Path) -> dict[str, Any]:
    """What a bisection stopped early measured: its journal's measurements, in order."""
    report = run_dir / "report.json"
    if report.is_file():
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data
    evaluations = []
    threshold = None
    for record in read_lines(run_dir / "journal.jsonl"):
        if record.get("type") == "threshold":
            threshold = {"value": record.get("value"), "how": record.get("how")}
        if record.get("type") != "measurement":
            continue
        m = record["measurement"]
        evaluations.append(
            {
                "commit": m.get("commit"),
                "phase": m.get("phase"),
                "verdict": None,
                "value": m.get("value"),
                "duration_s": m.get("duration_s"),
                "reason": m.get("reason"),
            }
        )
    return {"evaluations": evaluations, "threshold": threshold, "run_dir": str(run_dir)}
