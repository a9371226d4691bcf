"""The evidence behind a culprit as rows, for report.md and report.html alike."""

from __future__ import annotations

from dataclasses import dataclass

from bisector.numbers import NO_VALUE
from bisector.report.facts import (
    Reason,
    measured_runs_text,
    runs_text,
    short,
    split_reason,
    value_text,
)
from bisector.report.model import Report


@dataclass(frozen=True)
class EvidenceRow:
    role: str  # good endpoint, parent, culprit, bad endpoint
    commit: str
    subject: str
    value: str
    runs: str  # every run of that commit, with its phase
    verdict: str


def evidence_rows(report: Report) -> list[EvidenceRow]:
    """The endpoints and the culprit/parent step, oldest first."""
    rows = [
        EvidenceRow(
            "good endpoint",
            report.good.commit,
            report.good.subject,
            value_text(report.good.value, report.metric),
            runs_text(report.good.runs, report.metric),
            "good",
        )
    ]
    culprit = report.culprit
    if culprit is not None:
        parent = culprit.parent
        rows.append(
            EvidenceRow(
                "parent of the culprit",
                parent.commit,
                _subject(report, parent.commit),
                value_text(parent.value, report.metric),
                measured_runs_text(report, parent.commit),
                f"confirmation: {parent.verdict or NO_VALUE}",
            )
        )
        rows.append(
            EvidenceRow(
                "culprit",
                culprit.commit,
                culprit.subject,
                value_text(culprit.value, report.metric),
                measured_runs_text(report, culprit.commit),
                f"confirmation: {culprit.confirmation.get(culprit.commit, NO_VALUE)}",
            )
        )
    rows.append(
        EvidenceRow(
            "bad endpoint",
            report.bad.commit,
            report.bad.subject,
            value_text(report.bad.value, report.metric),
            runs_text(report.bad.runs, report.metric),
            "bad",
        )
    )
    return rows


def _subject(report: Report, commit: str) -> str:
    return next((e.subject for e in report.evaluations if e.commit == commit), "")


@dataclass(frozen=True)
class Skip:
    commit: str
    subject: str
    n: int
    reason: Reason


def skips(report: Report) -> list[Skip]:
    return [
        Skip(short(e.commit), e.subject, e.n, split_reason(e.reason))
        for e in report.evaluations
        if e.verdict == "skip"
    ]
