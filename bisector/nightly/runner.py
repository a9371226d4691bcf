"""The night's work over every configured job (see the package docstring)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisector.ci import gcs
from bisector.ci.changepoint import p_value_text
from bisector.errors import BisectorError, ConfigError
from bisector.exitcodes import NightlyExit
from bisector.nightly.config import JobConfig, NightlyConfig, load_nightly_config
from bisector.nightly.hunt import (
    FAILED,
    FOUND,
    UNBISECTED,
    HuntResult,
    bisect_hunt,
    hunt_run_dir,
)
from bisector.nightly.report import build_data, write_report
from bisector.nightly.series import Regression, find_regressions, update_series
from bisector.nightly.store import HUNTING, Hunt, NightlyStore, nightly_lock
from bisector.report import summary_lines
from bisector.settings import RunSettings

Log = Callable[[str], None]


def _log(line: str) -> None:
    print(f"bisector nightly: {line}", file=sys.stderr, flush=True)


def run_nightly(config_path: Path, *, log: Log = _log) -> int:
    cfg = load_nightly_config(config_path)
    for job in cfg.jobs:  # bad bisection tables fail now, not after a night of scoring
        if job.bisect_config is not None:
            check_run_table(job)
    with nightly_lock(cfg.state_dir):
        store = NightlyStore(cfg.database)
        try:
            client = gcs.client()
            codes = [_one_job(cfg, job, store, client, log) for job in cfg.jobs]
        finally:
            store.close()
    return max(codes, default=NightlyExit.NOTHING)


def check_run_table(job: JobConfig) -> None:
    """The job's bisection tables, read as the hunt will read them (errors name the job)."""
    assert job.bisect_config is not None
    RunSettings.from_config(job.bisect_config, good="HEAD", bad="HEAD")


def _one_job(cfg: NightlyConfig, job: JobConfig, store: NightlyStore, client: Any, log: Log) -> int:
    try:
        stored = update_series(cfg, job, store, client, log)
        log(f"{job.name}: {stored} new run(s) scored")
        regressions = find_regressions(cfg, job, store)
        codes: list[int] = [NightlyExit.NOTHING]
        if not regressions:
            log(f"{job.name}: no regression in {job.metric}")
        else:
            found = ", ".join(
                f"runs {r.good.run}..{r.bad.run} ({p_value_text(r.step.p_value)})"
                if r.step.threshold_source != "given"
                else f"runs {r.good.run}..{r.bad.run} (threshold {r.step.threshold:g})"
                for r in regressions
            )
            log(f"{job.name}: regressions in {job.metric}, newest first: {found}")
        handled = set()
        # Newest first; one new hunt a night per job: an older regression already hunted
        # is passed over, one not yet hunted waits for a night that has nothing newer.
        for regression in regressions:
            handled.add(regression.key)
            codes.append(_handle(cfg, job, store, regression, log))
            if codes[-1] != NightlyExit.NOTHING:
                break
        # A hunt a crash cut short resumes even when tonight's window no longer shows
        # its step (e.g. the regression was reverted since): the culprit is still wanted.
        for hunt in store.hunts(job.name):
            if hunt.status == HUNTING and hunt.metric == job.metric and hunt.regression:
                if (hunt.good_commit, hunt.bad_commit) in handled:
                    continue  # handled above (and, if still open, tried again next night)
                codes.append(_handle(cfg, job, store, Regression.from_json(hunt.regression), log))
        return max(codes)
    except ConfigError:
        raise
    except BisectorError as exc:  # this job's bucket or repository; the other jobs go on
        log(f"{job.name}: error: {exc}")
        return NightlyExit.USAGE


def _handle(
    cfg: NightlyConfig, job: JobConfig, store: NightlyStore, regression: Regression, log: Log
) -> int:
    good, bad = regression.key
    hunt = store.hunt(job.name, job.metric, good, bad)
    if hunt is not None and hunt.status != HUNTING:
        log(
            f"{job.name}: regression between runs {regression.good.run} and "
            f"{regression.bad.run} already hunted ({hunt.status}); nothing new"
        )
        return NightlyExit.NOTHING
    covering = _covering_hunt(store, job, regression)
    if hunt is None and covering is not None:
        # e.g. a run that was still going last night landed inside the range: the
        # culprit is in the range already hunted.
        log(
            f"{job.name}: regression between runs {regression.good.run} and "
            f"{regression.bad.run} lies inside runs {covering.good_run}..{covering.bad_run}, "
            f"already hunted ({covering.status}); nothing new"
        )
        return NightlyExit.NOTHING
    if hunt is None:
        log(
            f"{job.name}: new regression between runs {regression.good.run} and "
            f"{regression.bad.run} ({good[:12]}..{bad[:12]})"
        )
    else:
        log(f"{job.name}: resuming the hunt in {hunt.run_dir}")
    hunt = store.start_hunt(
        job.name,
        job.metric,
        (good, regression.good.run),
        (bad, regression.bad.run),
        hunt_run_dir(cfg, job, good, bad),
        regression=regression.to_json(),
    )
    why_not = regression.why_not_bisectable()
    if why_not is None and job.bisect_config is None:
        why_not = "no backend configured for this job (add [nightly.jobs.run])"
    if why_not is not None:
        result = HuntResult(UNBISECTED, why_not)
    else:
        result = bisect_hunt(cfg, job, store, hunt)
    code = NightlyExit.FOUND if result.status == FOUND else NightlyExit.REPORTED
    report_dir = cfg.reports_dir / job.name / f"{good[:12]}-{bad[:12]}".replace(":", "")
    data = build_data(
        job=job,
        regression=regression,
        status=result.status,
        exit_code=code,
        reason=result.reason,
        evidence=result.evidence,
        used=store.usage(hunt.id),
    )
    run_dir = hunt.run_dir if hunt.run_dir.is_dir() else None
    write_report(report_dir, data, run_dir)
    if cfg.upload:
        _upload(cfg, job, report_dir, log)
    status = result.status
    if status == FAILED and not result.evidence.evaluations:
        # Nothing was measured (e.g. the checkout lacks the commits yet): try again
        # the next night, reporting it each time, rather than giving the regression up.
        status = HUNTING
        log(f"{job.name}: the hunt could not start; it is tried again next night")
    store.update_hunt(
        hunt.id,
        status=status,
        culprit=result.culprit,
        reason=result.reason,
        report_dir=str(report_dir),
    )
    if result.evidence.report is not None:
        for line in summary_lines(result.evidence.report):
            log(f"{job.name}: {line}")
    if result.status == FOUND:
        log(f"{job.name}: culprit {result.culprit}; report {report_dir}/nightly.md")
    else:
        log(f"{job.name}: {result.status}: {result.reason}; report {report_dir}/nightly.md")
    return code


def _covering_hunt(store: NightlyStore, job: JobConfig, regression: Regression) -> Hunt | None:
    """A finished hunt of this job whose run range holds the regression's."""
    for hunt in store.hunts(job.name):
        if (
            hunt.metric == job.metric
            and hunt.status != HUNTING
            and hunt.good_run <= regression.good.run
            and regression.bad.run <= hunt.bad_run
        ):
            return hunt
    return None


def _upload(cfg: NightlyConfig, job: JobConfig, report_dir: Path, log: Log) -> None:
    from bisector.upload import upload_run

    destination = f"{cfg.upload.rstrip('/')}/{job.name}/{report_dir.name}" if cfg.upload else ""
    try:
        result = upload_run(report_dir, destination)
    except BisectorError as exc:  # the local report stands either way
        log(f"{job.name}: upload to {destination} failed: {exc}")
        return
    log(f"{job.name}: report uploaded to {destination} ({len(result.uploaded)} files)")
