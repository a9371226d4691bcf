"""The nightly report of one regression: nightly.json, nightly.md and a self-contained nightly.html.

The html holds the metric per CI run (inline SVG, matplotlib) with the threshold
and the last good / first bad runs marked, then the bisection's evidence: every
evaluation of the hunt's run (its report.json, or its journal when the budget
stopped it). The bisection's own report.* files are copied next to it.

nightly.json:
    job, ci_job, bucket, metric, status, exit_code, reason, generated_at
    range     {good_run, good_commit, bad_run, bad_commit, threshold, threshold_source,
               before, after, p_value (null with a given threshold)}
    higher_is_worse   the metric's direction the range was found with
    change_points [{run, last_before_run, first_after_run, before, after, change, p_value,
               direction, hunted}]   every change point of the window, oldest first
    runs      [{run, commit, result, value, status}]   the window the step was found in
    culprit   the bisection's culprit (see bisector.report.model) or null
    budget    {limit: {evaluations, cluster_hours}, used: {evaluations, cluster_hours}}
    bisection {run_dir, threshold, evaluations: [{commit, phase, verdict, value, ...}]}
"""

from __future__ import annotations

import html
import io
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bisector.ci.changepoint import is_worse, p_value_text
from bisector.dirs import ensure_dir
from bisector.nightly.hunt import HuntEvidence
from bisector.nightly.series import Regression


def build_data(
    *,
    job: Any,
    regression: Regression,
    status: str,
    exit_code: int,
    reason: str | None,
    evidence: HuntEvidence,
    used: tuple[int, float],
) -> dict[str, Any]:
    step = regression.step
    return {
        "job": job.name,
        "ci_job": job.job,
        "bucket": job.bucket,
        "metric": job.metric,
        "status": status,
        "exit_code": exit_code,
        "reason": reason,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "range": {
            "good_run": regression.good.run,
            "good_commit": regression.good.commit,
            "bad_run": regression.bad.run,
            "bad_commit": regression.bad.commit,
            "threshold": step.threshold,
            "threshold_source": step.threshold_source,
            "before": step.before,
            "after": step.after,
            "p_value": step.p_value,
        },
        "higher_is_worse": regression.higher_is_worse,
        "change_points": _change_points(regression),
        "runs": [
            {
                "run": r.run,
                "commit": r.commit,
                "result": r.result,
                "value": r.value,
                "status": r.status,
            }
            for r in regression.runs
        ],
        "culprit": asdict(evidence.culprit) if evidence.culprit else None,
        "budget": {
            "limit": {
                "evaluations": job.budget.evaluations,
                "cluster_hours": job.budget.cluster_hours,
            },
            "used": {"evaluations": used[0], "cluster_hours": round(used[1] / 3600, 6)},
        },
        "bisection": {
            "run_dir": evidence.run_dir,
            "threshold": asdict(evidence.threshold) if evidence.threshold else None,
            "evaluations": [
                {
                    "commit": e.commit,
                    "phase": e.phase,
                    "verdict": e.verdict or None,
                    "value": e.value,
                    "duration_s": e.duration_s,
                    "reason": e.reason,
                }
                for e in evidence.evaluations
            ],
        },
    }


def _change_points(regression: Regression) -> list[dict[str, Any]]:
    runs = regression.runs
    hunted = (regression.good.run, regression.bad.run)
    return [
        {
            "run": runs[p.index].run,
            "last_before_run": runs[p.last_before].run,
            "first_after_run": runs[p.first_after].run,
            "before": p.before,
            "after": p.after,
            "change": p.change,
            "p_value": p.p_value,
            "direction": p.direction,
            "hunted": regression.step.threshold_source == "change point"
            and (runs[p.last_before].run, runs[p.first_after].run) == hunted,
        }
        for p in regression.points
    ]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value == int(value) else f"{value:.4g}"


def _summary(data: dict[str, Any]) -> list[str]:
    r = data["range"]
    lines = [
        f"{data['metric']} of {data['ci_job']} stepped from {_num(r['before'])} to "
        f"{_num(r['after'])} (threshold {_num(r['threshold'])}, {r['threshold_source']}"
        + (f", {p_value_text(r.get('p_value'))})" if r["threshold_source"] != "given" else ")"),
        f"last good: run {r['good_run']}, commit {r['good_commit'] or '-'}",
        f"first bad: run {r['bad_run']}, commit {r['bad_commit'] or '-'}",
    ]
    for c in data.get("change_points", []):
        change = f" ({c['change']:+.0%})" if c["change"] is not None else ""
        lines.append(
            f"change point at runs {c['last_before_run']}..{c['first_after_run']}: "
            f"{_num(c['before'])} -> {_num(c['after'])}{change}, {c['direction']}, "
            f"{p_value_text(c['p_value'])}" + (" (this hunt)" if c["hunted"] else "")
        )
    culprit = data.get("culprit")
    if data["status"] == "found" and culprit:
        pr = f" (PR #{culprit['pr']})" if culprit.get("pr") else ""
        lines.append(f"culprit: {culprit['commit']} {culprit['subject']}{pr}")
        lines.append(f"author: {culprit.get('author')}, {culprit.get('date')}")
    else:
        lines.append(f"not bisected to a culprit ({data['status']}): {data['reason']}")
    used, limit = data["budget"]["used"], data["budget"]["limit"]
    lines.append(
        f"budget: {used['evaluations']} evaluations of {limit['evaluations'] or 'unlimited'}, "
        f"{used['cluster_hours']:.3g} cluster-hours of {limit['cluster_hours'] or 'unlimited'}"
    )
    return lines


def render_markdown(data: dict[str, Any]) -> str:
    lines = [f"# bisector nightly: {data['job']}", ""]
    lines += [f"- {line}" for line in _summary(data)]
    lines += [
        "",
        "## CI runs",
        "",
        f"| run | commit | result | {data['metric']} |",
        "|---|---|---|---|",
    ]
    for r in data["runs"]:
        shown = _num(r["value"]) if r["value"] is not None else r["status"]
        lines.append(f"| {r['run']} | `{(r['commit'] or '-')[:12]}` | {r['result']} | {shown} |")
    lines += ["", "## Bisection evidence", ""]
    evaluations = data["bisection"]["evaluations"]
    if not evaluations:
        lines.append("No evaluation was run.")
    else:
        lines += ["| # | commit | phase | verdict | value | reason |", "|---|---|---|---|---|---|"]
        for i, e in enumerate(evaluations, 1):
            lines.append(
                f"| {i} | `{(e['commit'] or '')[:12]}` | {e['phase']} | {e['verdict'] or '-'} "
                f"| {_num(e['value'])} | {e['reason'] or ''} |"
            )
    return "\n".join(lines) + "\n"


def plot_svg(data: dict[str, Any]) -> str:
    """The metric per CI run: good/bad against the threshold, the step's two runs marked."""
    from matplotlib.figure import Figure  # a bare Figure needs no GUI backend

    r = data["range"]
    fig = Figure(figsize=(9, 3.4))
    ax = fig.add_subplot()
    points = [(x["run"], x["value"]) for x in data["runs"] if x["value"] is not None]
    worse_up = data.get("higher_is_worse", True)
    for run, value in points:
        bad = is_worse(value, r["threshold"], higher_is_worse=worse_up)
        colour = "tab:red" if bad else "tab:green"
        ax.scatter([run], [value], color=colour, s=24, zorder=3)
    for x in data["runs"]:
        if x["value"] is None:
            ax.axvline(x["run"], color="tab:gray", alpha=0.3, linewidth=1)
    ax.axhline(
        r["threshold"],
        color="tab:orange",
        linestyle="--",
        label=f"threshold {_num(r['threshold'])}",
    )
    ax.axvline(r["good_run"], color="tab:green", alpha=0.4, label=f"last good {r['good_run']}")
    ax.axvline(r["bad_run"], color="tab:red", alpha=0.4, label=f"first bad {r['bad_run']}")
    values = [v for _, v in points]
    if values and min(values) > 0 and max(values) / min(values) >= 100:
        ax.set_yscale("log")
    ax.set_xlabel("CI run")
    ax.set_ylabel(data["metric"])
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg")
    svg = out.getvalue()
    return svg[svg.find("<svg") :]


def render_html(data: dict[str, Any]) -> str:
    summary = "".join(f"<li>{html.escape(line)}</li>" for line in _summary(data))
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(cell))}</td>"
            for cell in (
                i,
                (e["commit"] or "")[:12],
                e["phase"],
                e["verdict"] or "-",
                _num(e["value"]),
                e["reason"] or "",
            )
        )
        + "</tr>"
        for i, e in enumerate(data["bisection"]["evaluations"], 1)
    )
    link = (
        "<p>Full bisection report: <a href='bisection.html'>bisection.html</a></p>"
        if data.get("culprit") is not None or data["status"] in ("found", "inconclusive")
        else ""
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>bisector nightly: {html.escape(data['job'])}</title>"
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
        "td{border-top:1px solid #ddd;padding:2px 6px;font-size:13px}</style></head><body>"
        f"<h1>bisector nightly: {html.escape(data['job'])}</h1><ul>{summary}</ul>"
        f"<h2>{html.escape(data['metric'])} per CI run</h2><figure>{plot_svg(data)}</figure>"
        "<h2>Bisection evidence</h2>"
        "<table><tr><th>#</th><th>commit</th><th>phase</th><th>verdict</th><th>value</th>"
        f"<th>reason</th></tr>{rows}</table>{link}</body></html>\n"
    )


def write_report(directory: Path, data: dict[str, Any], run_dir: Path | None) -> Path:
    ensure_dir(
        directory,
        what="the report directory",
        fix="point `nightly.reports` at a directory bisector can write",
    )
    (directory / "nightly.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (directory / "nightly.md").write_text(render_markdown(data), encoding="utf-8")
    (directory / "nightly.html").write_text(render_html(data), encoding="utf-8")
    if run_dir is not None:
        for suffix in ("json", "md", "html"):
            source = run_dir / f"report.{suffix}"
            if source.is_file():
                shutil.copyfile(source, directory / f"bisection.{suffix}")
    return directory
