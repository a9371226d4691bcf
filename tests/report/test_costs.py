"""The cost section: the model's expectation beside what the run used, in md, html, summary,
report.json; and no made-up figures where the model has no phase durations."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from bisector.report.model import Report
from bisector.report.render import render_html, render_markdown
from bisector.report.summary import summary_lines
from tests.helpers.sample_report import SAMPLE_COST, sample_report


def _no_estimate(report: Report) -> Report:
    """The same run on a backend the model has no phase durations for (sim, no estimate)."""
    assert report.cost is not None
    model = replace(
        report.cost.model,
        basis="no phase durations for the sim backend: set [run] estimate to one evaluation's time",
        phases=None,
        wall_s=None,
        cluster_s=None,
        cluster_hours=None,
        money=None,
    )
    measured = replace(report.cost.measured, counted_whole=10, money=None)
    cost = replace(report.cost, price_per_cluster_hour=None, model=model, measured=measured)
    return replace(report, backend="sim", cost=cost)


def _section(md: str) -> str:
    start = md.index("## Cost")
    return md[start : md.index("\n## ", start + 1)]


def test_markdown_puts_the_models_figures_beside_the_measured_ones(tmp_path: Path) -> None:
    section = _section(render_markdown(sample_report(tmp_path)))
    assert "|  | model (expected before the run) | measured (this run) |" in section
    assert "| evaluations | 8 in 8 rounds | 10 (+1 reused from earlier runs) |" in section
    assert "| wall time | 10h47m | 8h25m |" in section  # 15 min setup + 8 x 79 min
    assert "| cluster time | 6h32m | 5h30m |" in section
    assert "| cluster-hours | 6.53 | 5.5 |" in section
    assert "| money at 4 per cluster-hour | 26.13 | 22.00 |" in section
    assert "build 30m00s, launch 12m00s, warmup 30m00s, collect 2m00s" in section
    assert "setup once 15m00s" in section and "2017 kubemark job" in section
    assert "first launch command to the end of its teardown" in section
    assert "counted whole" not in section and "No money figures" not in section


def test_without_phase_durations_the_model_says_no_estimate(tmp_path: Path) -> None:
    report = _no_estimate(sample_report(tmp_path))
    section = _section(render_markdown(report))
    assert "| evaluations | 8 in 8 rounds | 10 (+1 reused from earlier runs) |" in section
    assert "| wall time | no estimate | 8h25m |" in section
    assert "| cluster-hours | no estimate | 5.5 |" in section
    assert "money" not in section.split("\n\n")[1]  # no money row without a price
    assert "has no estimate of time, cluster-hours or money: no phase durations for the sim" in (
        section
    )
    assert "10 of 10 evaluations have no launch command log (the sim backend" in section
    assert "set [run] price_per_cluster_hour" in section
    lines = summary_lines(report)
    assert lines[-4] == (
        "cost, model (expected): 8 evaluations in 8 rounds; no estimate of time or "
        "cluster-hours (no phase durations for the sim backend: set [run] estimate to one "
        "evaluation's time)"
    )
    assert lines[-3] == (
        "cost, measured (this run): 10 evaluations (+1 reused), wall 8h25m, 5.5 cluster-hours "
        "(10 evaluations have no launch log, so their builds are counted in their cluster time)"
    )
    html = render_html(report)
    assert re.search(r'<td class="num muted">no estimate</td><td class="num"><strong>8h25m', html)


def test_html_shows_both_columns_labelled(tmp_path: Path) -> None:
    html = render_html(sample_report(tmp_path))
    start = html.index("<h2>Cost")
    section = html[start : html.index("<h2>", start + 1)]
    assert "<th>model (expected before the run)</th><th>measured (this run)</th>" in section
    assert (
        '<tr><td>cluster-hours</td><td class="num">6.53</td>'
        '<td class="num"><strong>5.5</strong></td></tr>'
    ) in section
    assert "<code>bisector run --dry-run</code>" in section
    # Between the smoking gun and the timeline.
    assert html.index("<h2>Smoking gun") < start < html.index("<h2>Timeline")


def test_summary_says_which_figures_are_the_models(tmp_path: Path) -> None:
    lines = summary_lines(sample_report(tmp_path))
    assert lines[-4] == (
        "cost, model (expected): 8 evaluations in 8 rounds, wall 10h47m, 6.53 cluster-hours, "
        "money 26.13"
    )
    assert lines[-3] == (
        "cost, measured (this run): 10 evaluations (+1 reused), wall 8h25m, 5.5 cluster-hours, "
        "money 22.00"
    )


def test_report_json_round_trips_the_cost_and_reads_reports_without_it(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    data = json.loads(json.dumps(report.to_json()))
    assert data["version"] == 2
    assert data["cost"]["model"]["phases"]["setup_s"] == 900.0
    assert data["cost"]["measured"]["cluster_hours"] == 5.5
    assert Report.from_json(data).cost == SAMPLE_COST
    none = _no_estimate(report)
    assert Report.from_json(json.loads(json.dumps(none.to_json()))).cost == none.cost
    # A report.json written before the cost section: no cost, and no section rendered.
    del data["cost"]
    old = Report.from_json(data)
    assert old.cost is None
    assert "## Cost" not in render_markdown(old)
    assert "cost, " not in "\n".join(summary_lines(old))
