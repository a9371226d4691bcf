"""The typed report of a finished search: what was found, and every measurement behind it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from bisector.backends.base import Backend, ReportsAdaptations, capability
from bisector.bisection.endpoints import Endpoints
from bisector.bisection.hunt import Hunt
from bisector.bisection.plan import estimate
from bisector.bisection.start import Bisection
from bisector.bisection.usage import cost_summary, measured_phases
from bisector.measure.journal import Mark as MarkRecord
from bisector.measure.journal import Pruned, TeardownFailed
from bisector.measure.measurement import Measurement
from bisector.metrics.direction import Worse, is_bad
from bisector.report.action import action_lines
from bisector.report.adaptation import Adaptation, read_build_fixes
from bisector.report.conclusive import established
from bisector.report.evidence import build_adaptations
from bisector.report.model import (
    Culprit,
    Endpoint,
    Evaluation,
    InsideRange,
    LogWindow,
    Mark,
    MergeRef,
    ParentResult,
    PrunedLogs,
    Report,
    TeardownFailure,
    Threshold,
)
from bisector.search.base import Found

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
        build_fixes=read_build_fixes(eval_dir) if eval_dir is not None else [],
        ran_on=m.ran_on,
        reverted=list(m.reverted),
        built=m.built,
        infra_skip=m.infra_skip,
    )


def build_report(
    b: Bisection,
    *,
    ends: Endpoints,
    hunts: Sequence[Hunt],
    unexplained: str,
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
    # A commit the journal keeps as a skip (it failed every launch in sessions where others
    # launched) is not measured again by the same command: its skips are no longer the
    # machine's passing trouble (`infra_skip`), they ask for a person.
    kept = b.journal.unlaunchable
    evaluations = [
        dataclasses.replace(e, infra_skip=False) if e.infra_skip and e.commit in kept else e
        for e in evaluations
    ]
    first = hunts[0]
    summary = first.search.summary()
    culprits = [
        _culprit(b, hunt, i, ordered, subject=subject, confidence=summary.confidence)
        for i, hunt in enumerate(hunts, 1)
        if hunt.found.culprit is not None
    ]
    culprits = _with_shares(culprits, ends)
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
    # Once phases are measured, the model's time is theirs (as the live ETA's).
    before = estimate(s, repo, b.good, b.bad)
    phases = measured_phases(list(b.journal.own), before.phases)
    costs = cost_summary(
        before,
        list(b.journal.own),
        sum(1 for m in ordered if m.id in cached),
        s.price_per_cluster_hour,
        earlier=sum(1 for m in b.journal.own if m.id in b.journal.earlier_ids),
        remodel=None if phases is None else estimate(s, repo, b.good, b.bad, measured=phases),
    )
    report = Report(
        status=_status(first.found),
        culprit=culprits[0] if culprits and first.found.culprit else None,
        candidates=first.found.candidates,
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
        verdicts=dict(first.search.verdicts),
        verdict_reasons=dict(first.search.reasons),
        same_tree_verdicts={c: s.text() for c, s in first.search.same_tree.items()},
        bisect_log=bisect_log,
        marks=marks,
        teardown_failures=failures,
        remote=remote,
        repo=str(Path(s.repo).resolve()),
        cost=costs,
        adaptations=_adaptations(b.backend) + build_adaptations(evaluations),
        culprits=culprits,
        unexplained=unexplained,
        revert_check=s.revert_check,
        pruned=PrunedLogs(pruned.at, pruned.freed_bytes, list(pruned.kept)) if pruned else None,
    )
    # Without a culprit, what the run did establish leads every form of the report.
    report.conclusive = established(report, subject)
    report.action = action_lines(report)
    return report


def _culprit(
    b: Bisection,
    hunt: Hunt,
    number: int,
    ordered: Sequence[Measurement],
    *,
    subject: Callable[[str], str],
    confidence: float | None,
) -> Culprit:
    """The culprit `hunt` found, with the runs of it and its parent as that hunt measured
    them (the reverts in force then applied)."""
    repo = b.repo
    found, confirmation = hunt.found, hunt.confirmation
    assert found.culprit is not None
    info = repo.info(found.culprit)
    parent = info.parents[0]
    mine = b.evaluator.reverts.of(found.culprit, hunt.reverted)
    theirs = b.evaluator.reverts.of(parent, hunt.reverted)

    def values_of(commit: str, tree: str) -> list[float]:
        return [
            m.value
            for m in ordered
            if m.commit == commit and m.tree == tree and m.value is not None
        ]

    values = values_of(found.culprit, mine.tree)
    parent_values = values_of(parent, theirs.tree)
    merge_refs = [MergeRef(c, subject(c), pr_number(subject(c))) for c in hunt.merges]
    outer = merge_refs[0] if merge_refs else None
    inner_pr = next((m.pr for m in reversed(merge_refs) if m.pr), None)
    inside = None
    if found.inside is not None:
        where = found.inside
        inside = InsideRange(where.good, where.bad, list(where.unmeasured))
    return Culprit(
        commit=found.culprit,
        subject=info.subject,
        author=info.author,
        date=info.date,
        pr=pr_number(info.subject) or inner_pr,
        merge=outer,
        merges=merge_refs,
        confirmed=confirmation.confirmed,
        confirmation=dict(confirmation.verdicts),
        confidence=confidence if number == 1 else hunt.search.summary().confidence,
        value=values[-1] if values else None,
        parent=ParentResult(
            parent,
            parent_values[-1] if parent_values else None,
            confirmation.verdicts.get(parent),
            list(theirs.reverted),
        ),
        unconfirmed=list(confirmation.problems),
        hunt=number,
        reverted=list(mine.reverted),
        inside=inside,
        revert=hunt.revert,
        is_merge=info.is_merge,
        profiles=list(hunt.profiles),
    )


def _with_shares(culprits: list[Culprit], ends: Endpoints) -> list[Culprit]:
    """Each culprit's share of the step from good to bad: what reverting it took off the
    bad endpoint (the revert checks, each with the earlier culprits reverted too), or,
    where that was not measured, its own step over its parent."""
    step = ends.bad_value - ends.good_value
    if not step:
        return culprits
    out = []
    before: float | None = ends.bad_value
    for c in culprits:
        after = c.revert.value if c.revert is not None else None
        if before is not None and after is not None:
            share, basis = (before - after) / step, "revert"
        elif c.value is not None and c.parent.value is not None:
            share, basis = (c.value - c.parent.value) / step, "step"
        else:
            share, basis = None, ""
        out.append(dataclasses.replace(c, share=share, share_basis=basis))
        before = after
    return out


def _adaptations(backend: Backend) -> list[Adaptation]:
    """The backend's adaptations, through the wrappers a run puts around it (nightly budget)."""
    reports = capability(backend, ReportsAdaptations)
    return [] if reports is None else reports.adaptations()
