"""The typed report of a finished search: what was found, and every measurement behind it."""

from __future__ import annotations

import re
from pathlib import Path

from bisector.backends.base import Backend, ReportsAdaptations, capability
from bisector.bisection.confirm import Confirmation
from bisector.bisection.endpoints import Endpoints
from bisector.bisection.plan import estimate
from bisector.bisection.start import Bisection
from bisector.bisection.usage import cost_summary
from bisector.measure.journal import Mark as MarkRecord
from bisector.measure.journal import Pruned, TeardownFailed
from bisector.measure.measurement import Measurement
from bisector.metrics.direction import Worse, is_bad
from bisector.report.adaptation import Adaptation
from bisector.report.model import (
    Culprit,
    Endpoint,
    Evaluation,
    LogWindow,
    Mark,
    MergeRef,
    ParentResult,
    PrunedLogs,
    Report,
    TeardownFailure,
    Threshold,
)
from bisector.search.base import Found, Search

_PR = re.compile(r"(?:Merge pull request #|\(#)(\d+)")

COMMAND_LOGS = ("build.log", "launch.log", "warmup.log", "collect.log", "teardown.log")


def pr_number(subject: str) -> int | None:
    match = _PR.search(subject)
    return int(match.group(1)) if match else None


def _verdict(value: float | None, threshold: float | None, worse: Worse = "higher") -> str:
    if value is None:
        return "skip"
    if threshold is None:
        return ""  # measured before any threshold was set (a bisection cut short)
    return "bad" if is_bad(value, threshold, worse) else "good"


def _status(found: Found) -> str:
    if found.culprit:
        return "found"
    return "inconclusive" if found.sure else "unsure"


def evaluation_of(
    n: int,
    m: Measurement,
    subject: str,
    threshold: float | None,
    cached: bool,
    *,
    early_goods_withdrawn: bool = False,
    worse: Worse = "higher",
) -> Evaluation:
    """One row of the report: measurement `m`, the `n`th of the run."""
    stopped_early = m.stopped_early
    if early_goods_withdrawn and m.early_verdict == "good" and stopped_early:
        stopped_early += "; WITHDRAWN: a full-length run contradicted early good verdicts"
    window = None
    if m.window is not None:
        window = LogWindow(m.window.get("start"), m.window.get("end"), float(m.window["span_s"]))
    eval_dir = Path(m.eval_dir) if m.eval_dir else None
    command_logs = (
        [str(eval_dir / name) for name in COMMAND_LOGS if (eval_dir / name).is_file()]
        if eval_dir is not None
        else []
    )
    return Evaluation(
        n=n,
        commit=m.commit,
        subject=subject,
        phase=m.phase,
        verdict=_verdict(m.value, threshold, worse),
        value=m.value,
        metrics=m.metrics,
        duration_s=m.duration_s,
        reason=m.reason,
        launch_attempts=m.launch_attempts,
        logs=m.logs,
        cached=cached,
        started_at=m.started_at,
        slot=m.slot,
        eval_dir=m.eval_dir,
        why=m.why,
        window=window,
        stopped_early=stopped_early,
        teardown_error=m.teardown_error,
        command_logs=command_logs,
        load=m.load,
    )


def build_report(
    b: Bisection,
    *,
    ends: Endpoints,
    found: Found,
    merges: list[str],
    confirmation: Confirmation,
    search: Search,
    bisect_log: str,
    remote: str | None,
) -> Report:
    repo, s = b.repo, b.settings
    subjects: dict[str, str] = {}

    def subject(commit: str) -> str:
        if commit not in subjects:
            subjects[commit] = repo.info(commit).subject
        return subjects[commit]

    threshold = ends.threshold
    # Every measurement of this run (a resumed run's too), and the cached ones it used:
    # no row is missing, and rows are in the order they were measured.
    measured = {m.id: m for m in b.journal.own} | b.evaluator.used
    ordered = sorted(measured.values(), key=lambda m: (m.started_at, m.slot))
    cached = b.journal.cached_ids
    withdrawn = b.evaluator.early_good_withdrawn
    evaluations = [
        evaluation_of(
            i,
            m,
            subject(m.commit),
            threshold,
            m.id in cached,
            early_goods_withdrawn=withdrawn,
            worse=s.worse,
        )
        for i, m in enumerate(ordered, 1)
    ]
    merge_refs = [MergeRef(c, subject(c), pr_number(subject(c))) for c in merges]
    culprit = None
    summary = search.summary()
    if found.culprit:
        info = repo.info(found.culprit)
        parent = info.parents[0]
        values = [m.value for m in ordered if m.commit == found.culprit and m.value is not None]
        parent_values = [m.value for m in ordered if m.commit == parent and m.value is not None]
        outer = merge_refs[0] if merge_refs else None
        inner_pr = next((m.pr for m in reversed(merge_refs) if m.pr), None)
        culprit = Culprit(
            commit=found.culprit,
            subject=info.subject,
            author=info.author,
            date=info.date,
            pr=pr_number(info.subject) or inner_pr,
            merge=outer,
            merges=merge_refs,
            confirmed=confirmation.confirmed,
            confirmation=dict(confirmation.verdicts),
            confidence=summary.confidence,
            value=values[-1] if values else None,
            parent=ParentResult(
                parent,
                parent_values[-1] if parent_values else None,
                confirmation.verdicts.get(parent),
            ),
            unconfirmed=list(confirmation.problems),
        )
    first_parent_range = [b.good, *repo.rev_list(b.good, b.bad, first_parent=True, paths=s.paths)]
    marks = [
        Mark(r.commit, r.verdict, r.note) for r in b.journal.records if isinstance(r, MarkRecord)
    ]
    # `bisector runs --prune` dropped logs the report links: it says so, and when.
    pruned = next((r for r in reversed(b.journal.records) if isinstance(r, Pruned)), None)
    # Only what is still left up: a failure a later run (or cleanup) tore down is history.
    still_open = {begun.eval_dir for begun in b.journal.unfinished()}
    failures = [
        TeardownFailure(r.commit, r.eval_dir, r.error)
        for r in b.journal.records
        if isinstance(r, TeardownFailed) and r.eval_dir in still_open
    ]
    # The model's figures from the same function and settings `--dry-run` uses, beside
    # what this run's own measurements used (the cached ones were paid for before).
    costs = cost_summary(
        estimate(s, repo, b.good, b.bad),
        list(b.journal.own),
        sum(1 for m in ordered if m.id in cached),
        s.price_per_cluster_hour,
        earlier=sum(1 for m in b.journal.own if m.id in b.journal.earlier_ids),
    )
    return Report(
        status=_status(found),
        culprit=culprit,
        candidates=found.candidates,
        search=summary,
        good=Endpoint(b.good, subject(b.good), ends.good_value, ends.good_runs),
        bad=Endpoint(b.bad, subject(b.bad), ends.bad_value, ends.bad_runs),
        threshold=Threshold(threshold, ends.how, s.worse),
        metric=s.metric,
        repeats=s.repeats,
        first_parent=s.first_parent,
        paths=list(s.paths),
        backend=s.backend,
        config_fingerprint=s.fingerprint(),
        run_dir=str(b.layout.root),
        range_size=len(repo.rev_list(b.good, b.bad, first_parent=s.first_parent, paths=s.paths)),
        range=[b.good, *repo.rev_list(b.good, b.bad, paths=s.paths)],
        first_parent_range=first_parent_range,
        evaluations=evaluations,
        verdicts=dict(search.verdicts),
        verdict_reasons=dict(search.reasons),
        same_tree_verdicts={c: s.text() for c, s in search.same_tree.items()},
        bisect_log=bisect_log,
        marks=marks,
        teardown_failures=failures,
        remote=remote,
        repo=str(Path(s.repo).resolve()),
        cost=costs,
        adaptations=_adaptations(b.backend),
        pruned=PrunedLogs(pruned.at, pruned.freed_bytes, list(pruned.kept)) if pruned else None,
    )


def _adaptations(backend: Backend) -> list[Adaptation]:
    """The backend's adaptations, through the wrappers a run puts around it (nightly budget)."""
    reports = capability(backend, ReportsAdaptations)
    return [] if reports is None else reports.adaptations()
