"""The evidence behind a culprit as rows, for report.md and report.html alike."""

from __future__ import annotations

from dataclasses import dataclass

from bisector.numbers import NO_VALUE
from bisector.report.adaptation import Adaptation
from bisector.report.facts import (
    Reason,
    measured_elsewhere,
    measured_runs_text,
    runs_text,
    short,
    split_reason,
    value_text,
)
from bisector.report.model import Evaluation, Report


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
    measured: str = ""  # its commit's values in other runs: this run only was lost

    @property
    def after(self) -> str:
        """What follows the reason: that the commit was measured in another run."""
        return f" (measured in another run: {self.measured})" if self.measured else ""


def skips(report: Report) -> list[Skip]:
    return [
        Skip(
            short(e.commit),
            e.subject,
            e.n,
            split_reason(e.reason),
            measured_elsewhere(report, e),
        )
        for e in report.evaluations
        if e.verdict == "skip"
    ]


def build_adaptations(evaluations: list[Evaluation]) -> list[Adaptation]:
    """Each change any candidate was built with (build-fixes.json), once, saying whose it
    is and which commits' builds had it: report.json's `adaptations` lists them."""
    found: dict[str, tuple[Adaptation, list[str]]] = {}
    for e in evaluations:
        for fix in e.build_fixes:
            name = f"build: {fix.name}"
            if name not in found:
                whose = "a step of the tree's own build" if fix.source == "tree" else "configured"
                span = f", {fix.range}" if fix.range else ""
                found[name] = (Adaptation(name, f"{whose}{span}: {fix.why}", fix.commands), [])
            commits = found[name][1]
            if e.commit not in commits:
                commits.append(e.commit)
    every = len({e.commit for e in evaluations})
    return [
        Adaptation(a.name, f"{a.why} (the builds of {len(commits)} of {every} commits)", a.commands)
        for a, commits in found.values()
    ]


def built_with(report: Report, commit: str) -> str:
    """What the latest run of `commit` was built with beyond `go build` of its tree, as a
    reader sees it: `generate-openapi (from the tree's own build), x (configured fix)`;
    "" when nothing (or nothing was recorded)."""
    runs = [e for e in report.evaluations if e.commit == commit and e.build_fixes]
    if not runs:
        return ""
    latest = max(runs, key=lambda e: e.n)
    return ", ".join(f.describe() for f in latest.build_fixes)
