"""Tonight's CI runs: score the ones the database has not seen, then look for a new step.

Only finished runs are stored, and only with an answer: a run still going (no
finished.json) is scored on a later night, and so is one whose metadata or logs
could not be read (a transient GCS error, a transport error, an object being
rewritten must not become a permanent hole in the series: a stored run is never
scored again). A run an earlier version stored as unreadable is scored again.
A run without logs, or
whose log lacks the metric's lines, is stored with no value: it takes no part
in the change point, and a range spanning it still holds the culprit. A `cl2`
metric is read from the build's CL2 summary in artifacts/ instead (as `bisector
history` reads it): a build without one (it died before CL2 wrote its report) is
stored with no value the same way, and a garbled one is unreadable (tried again).

The regressions follow the metric's direction (the registry's `worse`): for a
throughput a drop is a regression and a rise an improvement, never hunted.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bisector.ci.cache import ScoreCache
from bisector.ci.changepoint import ChangePoint, Step, find_change_points, step_of
from bisector.ci.regression import metric_higher_is_worse
from bisector.ci.runs import JobRef, list_runs, select_runs
from bisector.ci.scoring import UNREADABLE, RunScore, ScoreSettings, score_runs
from bisector.nightly.config import JobConfig, NightlyConfig
from bisector.nightly.store import NightlyStore, StoredRun


@dataclass(frozen=True)
class Regression:
    step: Step
    good: StoredRun  # the last good run before the step
    bad: StoredRun  # the first bad run after it
    runs: list[StoredRun]  # the window the step was found in
    points: tuple[ChangePoint, ...] = ()  # every change point of that window, oldest first
    higher_is_worse: bool = True

    def why_not_bisectable(self) -> str | None:
        missing = [f"run {r.run}" for r in (self.good, self.bad) if not r.commit]
        if missing:
            return f"the metadata of {' and '.join(missing)} names no commit"
        if self.good.commit == self.bad.commit:
            return (
                f"runs {self.good.run} and {self.bad.run} tested the same commit: "
                "the step is noise or infrastructure, not code"
            )
        return None

    def to_json(self) -> str:
        """Stored with the hunt, so a hunt cut short resumes even if the step is gone."""
        return json.dumps(
            {
                "step": asdict(self.step),
                "runs": [asdict(r) for r in self.runs],
                "good": self.good.run,
                "bad": self.bad.run,
                "points": [asdict(p) for p in self.points],
                "higher_is_worse": self.higher_is_worse,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Regression:
        data = json.loads(text)
        runs = [StoredRun(**r) for r in data["runs"]]
        by_run = {r.run: r for r in runs}
        # Hunts stored before change points had p-values carry neither `points` nor
        # `higher_is_worse` (nor the step's p_value): they resume all the same.
        return cls(
            Step(**data["step"]),
            by_run[data["good"]],
            by_run[data["bad"]],
            runs,
            tuple(ChangePoint(**p) for p in data.get("points", [])),
            bool(data.get("higher_is_worse", True)),
        )

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the regression with the job: the two commits (or runs)."""
        return (
            self.good.commit or f"run:{self.good.run}",
            self.bad.commit or f"run:{self.bad.run}",
        )


def _stored(score: RunScore, metric: str) -> StoredRun:
    return StoredRun(
        run=score.run,
        commit=score.info.commit,
        result=score.info.result,
        started=score.info.started,
        value=score.value(metric),
        status=score.status(metric),
    )


def update_series(
    cfg: NightlyConfig,
    job: JobConfig,
    store: NightlyStore,
    client: Any,
    log: Callable[[str], None],
) -> int:
    """Score the job's new finished runs into the database; returns how many were stored."""
    ref = JobRef(job.bucket, job.job)
    runs = select_runs(list_runs(client, ref), last=cfg.window)
    # Runs stored with an answer; one stored as unreadable (by an earlier version) is not.
    known = {r.run for r in store.series(job.name, job.metric) if not _unreadable(r.status)}
    new = [r for r in runs if r not in known]
    if not new:
        return 0
    cache = ScoreCache(cfg.state_dir / "score-cache")
    log(f"{job.name}: scoring {len(new)} new run(s) of {ref}")
    done = itertools.count(1)
    lock = threading.Lock()

    def progress(score: RunScore) -> None:
        # A line per run (scoring threads call this): a night of CI logs takes minutes.
        how = "cached" if score.cached else "scored"
        with lock:
            log(f"{job.name}: run {score.run} {how} ({next(done)} of {len(new)})")

    scored = score_runs(
        client,
        ref,
        new,
        cache,
        ScoreSettings(
            master=job.master,
            extra_metrics=job.metrics.definitions or None,
            # A cl2 metric is read from the builds' CL2 summaries, not their logs; it is
            # part of the score cache's key, so a cached log score is never taken for it.
            source=job.metrics.source_metric(job.metric),
        ),
        on_done=progress,
    )
    stored = 0
    for score in scored:
        if score.info.result is None:
            log(f"{job.name}: run {score.run} has not finished; scored on a later night")
            continue
        if _unreadable(score.status(job.metric)):
            log(f"{job.name}: run {score.run}: {score.problem}; retried on a later night")
            continue
        store.put_run(job.name, job.metric, _stored(score, job.metric))
        stored += 1
    return stored


def _unreadable(status: str) -> bool:
    """The run could not be read: a failure of tonight's reading, not a fact of the run."""
    return status.startswith(UNREADABLE)


def find_regressions(cfg: NightlyConfig, job: JobConfig, store: NightlyStore) -> list[Regression]:
    """The regressions in the stored window, newest first (the order they are hunted in).

    Without a threshold, every change point that made the metric worse; with one, the
    newest good->bad step against it. A lone bad run is no step either way.
    """
    runs = store.series(job.name, job.metric, last=cfg.window)
    values = [r.value for r in runs]
    worse_up = metric_higher_is_worse(job.metrics, job.metric)
    points = tuple(find_change_points(values, higher_is_worse=worse_up, min_runs=job.min_bad_runs))
    if job.threshold is None:
        steps = [p.as_step() for p in reversed(points) if p.regression]
    else:
        given = step_of(
            values,
            points,
            threshold=job.threshold,
            min_bad_runs=job.min_bad_runs,
            higher_is_worse=worse_up,
        )
        steps = [given] if given is not None else []
    return [
        Regression(s, runs[s.last_good], runs[s.first_bad], runs, points, worse_up) for s in steps
    ]
