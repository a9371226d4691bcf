"""report.md and a self-contained report.html (the plot is inline SVG made with matplotlib)."""

from __future__ import annotations

import html
import io
from typing import Any

from bisector.report.model import Report

_VERDICT_COLOUR = {"good": "tab:green", "bad": "tab:red", "skip": "tab:gray"}


def _search_lines(data: dict[str, Any]) -> list[str]:
    search = data.get("search") or {}
    if search.get("mode") != "posterior":
        return ["- confidence: not modelled (plain git bisect verdicts, no error rate given)"]
    how = (
        f"verdict error rate {search['error_rate']:g}"
        if search.get("likelihood") == "verdict"
        else "likelihood fitted to the endpoints' runs"
    )
    lines = [f"- confidence: {search['confidence']:.4f} (probabilistic bisection, {how})"]
    if search.get("parallel", 1) > 1:
        lines.append(f"- {search['parallel']} evaluations at a time, rounds {search['rounds']}")
    return lines


def _unsure_lines(data: dict[str, Any]) -> list[str]:
    search = data["search"]
    likely = search.get("likely_range") or {"commits": [], "probability": 0.0}
    commits = likely["commits"]
    lines = [
        "**Unsure**: the evaluation budget ran out before the search was sure "
        f"(best guess {', '.join(c[:12] for c in search.get('best_guess', []))} "
        f"with probability {search['confidence']:.3f}).",
        f"- the culprit is one of these {len(commits)} commits with probability "
        f"{likely['probability']:.3f}:",
    ]
    lines += [f"  - `{c}`" for c in commits[:50]]
    if len(commits) > 50:
        lines.append(f"  - ... and {len(commits) - 50} more")
    return lines


def _culprit_lines(data: dict[str, Any]) -> list[str]:
    culprit = data.get("culprit")
    if not culprit and data.get("status") == "unsure":
        return _unsure_lines(data)
    if not culprit:
        lines = [
            "**No single culprit**: it could be any of these (commits between them could "
            "not be measured):"
        ]
        lines += [f"- `{c}`" for c in data.get("candidates", [])]
        lines += _search_lines(data)
        return lines
    pr = f" (PR #{culprit['pr']})" if culprit.get("pr") else ""
    lines = [
        f"**Culprit**: `{culprit['commit']}` {culprit['subject']}{pr}",
        f"- author: {culprit['author']}, {culprit['date']}",
        f"- {data['metric']}: {culprit.get('value')} vs parent {culprit['parent']['value']}",
        "- confirmed by re-measuring culprit and parent: "
        + ("yes" if culprit["confirmed"] else "NO"),
        *_search_lines(data),
    ]
    if culprit.get("merge"):
        merge = culprit["merge"]
        lines.append(f"- found inside merge `{merge['commit'][:12]}` {merge['subject']}")
    return lines


def render_markdown(report: Report) -> str:
    data = report.to_json()
    threshold = data["threshold"]
    lines = [
        "# bisector report",
        "",
        *_culprit_lines(data),
        "",
        f"- good `{data['good']['commit'][:12]}`: {data['metric']} = {data['good']['value']:g}",
        f"- bad `{data['bad']['commit'][:12]}`: {data['metric']} = {data['bad']['value']:g}",
        f"- threshold {threshold['value']:g} ({threshold['how']})",
        f"- range: {data['range_size']} commits, {len(data['evaluations'])} evaluations",
        "",
        "| # | commit | phase | verdict | value | duration | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, e in enumerate(data["evaluations"], 1):
        value = "" if e["value"] is None else f"{e['value']:g}"
        reason = (e["reason"] or "").replace("|", "\\|").replace("\n", " ")[:120]
        cached = " (cached)" if e.get("cached") else ""
        lines.append(
            f"| {i} | `{e['commit'][:12]}` | {e['phase']}{cached} | {e['verdict']} | {value} "
            f"| {e['duration_s']:.1f}s | {reason} |"
        )
    return "\n".join(lines) + "\n"


def plot_figure(data: dict[str, Any]) -> Any:
    """The metric along the range: one point per measurement, threshold line, culprit marked."""
    from matplotlib.figure import Figure  # a bare Figure needs no GUI backend

    position = {commit: i for i, commit in enumerate(data.get("range", []))}
    fig = Figure(figsize=(9, 3.6))
    ax = fig.add_subplot()
    values: list[float] = []
    for e in data["evaluations"]:
        x = position.get(e["commit"])
        if x is None:
            continue
        if e["value"] is None:
            ax.axvline(x, color="tab:gray", alpha=0.3, linewidth=1)
            continue
        values.append(e["value"])
        ax.scatter([x], [e["value"]], color=_VERDICT_COLOUR[e["verdict"]], zorder=3, s=24)
    threshold = data["threshold"]["value"]
    ax.axhline(threshold, color="tab:orange", linestyle="--", label=f"threshold {threshold:g}")
    culprit = data.get("culprit")
    if culprit and culprit["commit"] in position:
        ax.axvline(position[culprit["commit"]], color="tab:red", alpha=0.5, label="culprit")
    positive = [v for v in values if v > 0]
    if (
        positive
        and max(positive) / max(min(positive), 1e-12) >= 100
        and len(positive) == len(values)
    ):
        ax.set_yscale("log")
    ax.set_xlabel("commit position in good..bad (oldest left)")
    ax.set_ylabel(data["metric"])
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    return fig


def plot_svg(data: dict[str, Any]) -> str:
    fig = plot_figure(data)
    out = io.StringIO()
    fig.savefig(out, format="svg")
    svg = out.getvalue()
    return svg[svg.find("<svg") :]


def render_html(report: Report) -> str:
    data = report.to_json()
    markdown = render_markdown(report)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(cell))}</td>"
            for cell in (
                i,
                e["commit"][:12],
                e["subject"],
                e["phase"],
                e["verdict"],
                "" if e["value"] is None else f"{e['value']:g}",
                f"{e['duration_s']:.1f}s",
                e["reason"] or "",
            )
        )
        + "</tr>"
        for i, e in enumerate(data["evaluations"], 1)
    )
    summary = "".join(f"<p>{html.escape(line)}</p>" for line in _culprit_lines(data))
    head = markdown.split("\n| #")[0]
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>bisector report</title>"
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
        "td{border-top:1px solid #ddd;padding:2px 6px;font-size:13px}</style></head><body>"
        f"<h1>bisector report</h1>{summary}<pre>{html.escape(head)}</pre>"
        f"<figure>{plot_svg(data)}</figure>"
        "<table><tr><th>#</th><th>commit</th><th>subject</th><th>phase</th><th>verdict</th>"
        f"<th>value</th><th>duration</th><th>reason</th></tr>{rows}</table></body></html>\n"
    )
