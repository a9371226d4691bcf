"""The run's report: report.json (the schema below), report.md and a self-contained report.html.

report.json, version 1:
    status        "found" | "inconclusive" | "unsure"
                  (unsure: the evaluation budget ran out before the posterior was sure)
    culprit       {commit, subject, author, date, pr, merge, confirmed, confidence, value,
                  parent} | null
                  (merge: {commit, subject, pr} when found by descending into a first-parent merge;
                  confidence: posterior probability of the culprit, null without a noise model)
    candidates    commits that could be the culprit when only skipped commits were left
    search        {mode: "git-bisect"|"posterior", error_rate, likelihood, parallel,
                  rounds: {phase: n}, confidence, sure, likely_range: {commits, probability}
                  | null (smallest range holding 95 % when unsure), best_guess (when unsure)}
    good, bad     {commit, subject, value}
    threshold     {value, how}            how: "given" or "calibrated: ..."
    metric, repeats, first_parent, paths, backend, config_fingerprint, run_dir
    range_size    commits in good..bad (first-parent chain with --first-parent)
    evaluations   [{commit, subject, phase, verdict, value, metrics, duration_s, reason,
                    launch_attempts, logs, cached}]   in the order they were measured
    verdicts      {commit: good|bad|skip}   verdicts fed to git bisect
    bisect_log    `git bisect log` of the last session
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.gitrepo import GitRepo
from bisector.search.measure import Measurement
from bisector.search.options import RunOptions

_PR = re.compile(r"(?:Merge pull request #|\(#)(\d+)")


def pr_number(subject: str) -> int | None:
    match = _PR.search(subject)
    return int(match.group(1)) if match else None


@dataclass
class Report:
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def culprit(self) -> dict[str, Any] | None:
        return self.data.get("culprit")

    @property
    def evaluations(self) -> list[dict[str, Any]]:
        return list(self.data.get("evaluations", []))

    def write(self, run_dir: Path) -> None:
        from bisector.search.render import render_html, render_markdown

        (run_dir / "report.json").write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        (run_dir / "report.md").write_text(render_markdown(self.data))
        (run_dir / "report.html").write_text(render_html(self.data))


def _verdict(value: float | None, threshold: float) -> str:
    if value is None:
        return "skip"
    return "bad" if value >= threshold else "good"


def _status(culprit: str | None, search: dict[str, Any] | None) -> str:
    if culprit:
        return "found"
    return "unsure" if search and search.get("sure") is False else "inconclusive"


def build_report(
    *,
    repo: GitRepo,
    options: RunOptions,
    run_dir: Path,
    good: tuple[str, float],
    bad: tuple[str, float],
    threshold: tuple[float, str],
    culprit: str | None,
    merge: str | None,
    candidates: list[str],
    confirmation: dict[str, str],
    measurements: Iterable[Measurement],
    cached_ids: set[str],
    verdicts: dict[str, str],
    reasons: dict[str, str],
    bisect_log: str,
    search: dict[str, Any] | None = None,
) -> Report:
    subjects: dict[str, str] = {}

    def subject(commit: str) -> str:
        if commit not in subjects:
            subjects[commit] = repo.info(commit).subject
        return subjects[commit]

    ordered = sorted(measurements, key=lambda m: m.started_at)
    evaluations = [
        {
            "commit": m.commit,
            "subject": subject(m.commit),
            "phase": m.phase,
            "verdict": _verdict(m.value, threshold[0]),
            "value": m.value,
            "metrics": m.metrics,
            "duration_s": m.duration_s,
            "reason": m.reason,
            "launch_attempts": m.launch_attempts,
            "logs": m.logs,
            "cached": m.id in cached_ids,
        }
        for m in ordered
    ]
    culprit_data: dict[str, Any] | None = None
    if culprit:
        info = repo.info(culprit)
        parent = info.parents[0]
        values = [m.value for m in ordered if m.commit == culprit and m.value is not None]
        parent_values = [m.value for m in ordered if m.commit == parent and m.value is not None]
        merge_data = None
        if merge:
            merge_subject = subject(merge)
            merge_data = {"commit": merge, "subject": merge_subject, "pr": pr_number(merge_subject)}
        culprit_data = {
            "commit": culprit,
            "subject": info.subject,
            "author": info.author,
            "date": info.date,
            "pr": pr_number(info.subject) or (merge_data["pr"] if merge_data else None),
            "merge": merge_data,
            "confirmed": confirmation.get(culprit) == "bad" and confirmation.get(parent) == "good",
            "confirmation": confirmation,
            "confidence": (search or {}).get("confidence"),
            "value": values[-1] if values else None,
            "parent": {
                "commit": parent,
                "value": parent_values[-1] if parent_values else None,
                "verdict": confirmation.get(parent),
            },
        }
    range_commits = repo.rev_list(
        good[0], bad[0], first_parent=options.first_parent, paths=options.paths
    )
    data: dict[str, Any] = {
        "version": 1,
        "status": _status(culprit, search),
        "culprit": culprit_data,
        "candidates": candidates,
        "good": {"commit": good[0], "subject": subject(good[0]), "value": good[1]},
        "bad": {"commit": bad[0], "subject": subject(bad[0]), "value": bad[1]},
        "threshold": {"value": threshold[0], "how": threshold[1]},
        "metric": options.metric,
        "repeats": options.repeats,
        "first_parent": options.first_parent,
        "paths": list(options.paths),
        "backend": options.backend,
        "config_fingerprint": options.fingerprint(),
        "run_dir": str(run_dir),
        "range_size": len(range_commits),
        # Every commit of the range (merged branches too), oldest first: the plot's x axis.
        "range": [good[0], *repo.rev_list(good[0], bad[0], paths=options.paths)],
        "evaluations": evaluations,
        "verdicts": verdicts,
        "verdict_reasons": reasons,
        "bisect_log": bisect_log,
        "search": search or {"mode": "git-bisect"},
    }
    return Report(data)
