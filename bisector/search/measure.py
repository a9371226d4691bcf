"""One evaluation of one candidate: build, launch (with retries), warmup, collect, score, teardown.

Self-contained so `run`, `demo` and `nightly` share it. Infrastructure failures
and logs without data for the metric come back as a measurement with no value
and a `reason`: the caller records them as *skip*, never as a verdict.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from bisector.backends.base import Backend, Candidate
from bisector.errors import BisectorError, InfraError, LaunchError
from bisector.logs import Scores, metric_value, score_logs

Scorer = Callable[[list[str]], Scores]


@dataclass
class Measurement:
    """What one evaluation of one commit measured (journaled as one JSON line)."""

    commit: str
    tree: str
    phase: str  # "endpoint", "bisect" or "confirm"
    value: float | None = None  # None: no verdict possible, see `reason`
    metrics: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    duration_s: float = 0.0
    logs: list[str] = field(default_factory=list)
    launch_attempts: int = 0
    eval_dir: str = ""
    teardown_error: str | None = None
    started_at: float = 0.0
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def _score(scorer: Scorer, logs: list[str], metric: str, m: Measurement) -> None:
    try:
        scores = scorer(logs)
    except BisectorError as exc:  # an unreadable or corrupt log is the infrastructure's fault
        m.reason = f"collect: log cannot be scored: {exc}"
        return
    except Exception as exc:  # e.g. an I/O error mid-read: a skip, not the end of the run
        m.reason = f"collect: log cannot be scored: {type(exc).__name__}: {exc}"
        return
    m.metrics = dict(scores.metrics)
    m.value = metric_value(scores, metric)
    if m.value is None:
        m.reason = f"no data: the log has no lines metric {metric!r} needs"


def evaluate_candidate(
    backend: Backend,
    candidate: Candidate,
    *,
    metric: str,
    tree: str = "",
    phase: str = "bisect",
    launch_attempts: int = 3,
    retry_wait_s: float = 0.0,
    scorer: Scorer = score_logs,
) -> Measurement:
    """Evaluate `candidate` once; teardown runs on every path once launch was attempted."""
    m = Measurement(candidate.commit, tree, phase, started_at=time.time())
    m.eval_dir = str(candidate.eval_dir)
    start = time.monotonic()
    launched = False

    def teardown_between(_state: object) -> None:
        backend.teardown(candidate)

    try:
        candidate.eval_dir.mkdir(parents=True, exist_ok=True)
        backend.build(candidate)
        launched = True
        for attempt in Retrying(
            stop=stop_after_attempt(max(1, launch_attempts)),
            wait=wait_fixed(retry_wait_s),
            retry=retry_if_exception_type(LaunchError),
            before_sleep=teardown_between,
            reraise=True,
        ):
            with attempt:
                m.launch_attempts += 1
                backend.launch(candidate)
        backend.warmup(candidate)
        logs = [str(p) for p in backend.collect(candidate)]
        m.logs = logs
        _score(scorer, logs, metric, m)
    except InfraError as exc:
        m.reason = f"{exc.kind}: {exc.reason}"
    finally:
        if launched:
            try:
                backend.teardown(candidate)
            except InfraError as exc:
                m.teardown_error = exc.reason
        m.duration_s = round(time.monotonic() - start, 3)
    return m
