"""report.html: a rendered page, self-contained, with the evidence in reading order."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from bisector.report.model import Report
from bisector.report.render import render_html
from bisector.report.summary import summary_lines
from bisector.report.timeline import rows as timeline_rows
from tests.helpers.sample_report import BRANCH, MAINLINE, sample_report


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sample's page, rendered once (matplotlib takes about a second per plot)."""
    return render_html(sample_report(tmp_path_factory.mktemp("run")))


def test_no_raw_markdown_and_no_duplicated_summary(page: str) -> None:
    html = page
    outside_output = re.sub(r'<pre class="out">.*?</pre>', "", html, flags=re.DOTALL)
    assert "**" not in outside_output  # `make: ***` inside a command's output is fine
    assert "# bisector report" not in html and "- author:" not in html
    assert html.count("Culprit found and confirmed") == 2  # the <title> and the banner
    assert "<pre>" not in html  # only the classed output blocks


def test_self_contained(tmp_path: Path) -> None:
    html = render_html(sample_report(tmp_path, remote=None))  # no GitHub links either
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)
    assert "<style>" in html and html.count("<svg") == 2  # range plot and smoking gun


def test_teardown_failure_comes_first_and_loud(page: str) -> None:
    html = page
    alarm = html.index('class="alarm"')
    assert alarm < html.index("<h2>Culprit</h2>")
    assert "bisector cleanup --run-dir" in html[alarm : html.index("<h2>Culprit</h2>")]


def test_culprit_and_evidence(page: str) -> None:
    html = page
    assert BRANCH[1] in html and "Optimize selector for single-matching items" in html
    assert "wojtek-t &lt;wojtek-t@users.noreply.github.com&gt;" in html
    assert "2 runs: 10, 12" in html and "2,300 (bisect), 2,350 (confirm)" in html
    assert "came in with merge" in html and "PR #46588" in html


def test_skip_output_and_command_logs(page: str) -> None:
    html = page
    assert "`make quick-release KUBE_FASTBUILD=true` exited with code 2" in html
    assert '<pre class="out">compiling k8s.io/apiserver\n' in html
    assert '<a class="nw" href="evals/005/build.log">build.log</a>' in html


# Issue 22, point 6: the report fixes, as rendered.
def test_every_evaluation_links_its_apiserver_log(page: str, tmp_path: Path) -> None:
    assert '<a class="nw" href="evals/010/logs/kube-apiserver.log">kube-apiserver.log</a>' in page
    report = sample_report(tmp_path)
    gz = replace(
        report,
        evaluations=[
            replace(e, logs=[f"{report.run_dir}/evals/{e.n:03d}/logs/kube-apiserver.log.gz"])
            for e in report.evaluations
        ],
    )
    rows = timeline_rows(gz)  # what report.html and report.md link, one per evaluation
    assert [r.logs for r in rows] == [
        [f"evals/{e.n:03d}/logs/kube-apiserver.log.gz"] for e in report.evaluations
    ]
    assert "<th>logs</th>" in page


def test_log_window_dates_do_not_wrap_and_gun_table_is_compact(page: str) -> None:
    assert 'from <span class="nw">' in page and ".nw{white-space:nowrap}" in page
    assert '<table class="gun">' in page and "table.gun th+th{text-align:right" in page


def test_a_culprit_decided_by_a_same_tree_merge_says_so(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    culprit = report.culprit
    assert culprit is not None
    same = f"same tree as {MAINLINE[4][:12]}, measured there: 2,450"
    said = replace(
        report, verdict_reasons={culprit.commit: same}, same_tree_verdicts={culprit.commit: same}
    )
    html = render_html(said)
    assert f"(the search judged it by commit {MAINLINE[4][:12]}, which has the same" in html
    assert f"    the search judged the culprit by commit {MAINLINE[4][:12]}, which" in "\n".join(
        summary_lines(said)
    )


def test_a_same_tree_verdict_is_a_field_not_read_from_the_reason(tmp_path: Path) -> None:
    """A reason that only reads like one (a person's mark note) is not a same-tree verdict;
    a report.json from before the field still shows its same-tree verdict."""
    report = sample_report(tmp_path)
    culprit = report.culprit
    assert culprit is not None
    looks = "same tree as the last release, I checked by hand"
    said = replace(report, verdict_reasons={culprit.commit: looks})
    assert "the search judged it by" not in render_html(said)
    old = said.to_json()
    del old["same_tree_verdicts"]
    assert Report.from_json(old).same_tree_verdicts == {culprit.commit: looks}
