"""report.md: the page's content for a terminal, with no HTML in it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from bisector.report.render import render_markdown
from tests.helpers.sample_report import BRANCH, MAINLINE, SKIP_REASON, sample_report

TAG = re.compile(r"</?[A-Za-z][^>\s]*[^>]*>")


def test_markdown_has_no_html(tmp_path: Path) -> None:
    md = render_markdown(sample_report(tmp_path))
    assert not TAG.search(md.replace("\\<", "")), TAG.findall(md)
    assert "wojtek-t \\<wojtek-t@users.noreply.github.com>" in md  # escaped, not a tag


def test_markdown_sections_in_reading_order(tmp_path: Path) -> None:
    md = render_markdown(sample_report(tmp_path))
    order = [
        "TEARDOWN FAILED",
        "**Culprit found and confirmed**",
        "## Culprit",
        "## Evidence",
        "## Smoking gun",
        "## Timeline",
        "## Run",
    ]
    positions = [md.index(heading) for heading in order]
    assert positions == sorted(positions)


def test_evidence_shows_every_run_threshold_and_confirmation(tmp_path: Path) -> None:
    md = render_markdown(sample_report(tmp_path))
    assert "| good endpoint |" in md and "2 runs: 10, 12" in md and "2 runs: 2,400, 2,500" in md
    assert "2,300 (bisect), 2,350 (confirm)" in md  # the culprit's runs, with their phases
    assert "13 (bisect), 12.5 (confirm)" in md  # its parent's
    assert "threshold: 100, given by the configuration" in md
    assert "confirmed by measuring the culprit and its parent again: yes" in md
    assert "confidence: not modelled" in md
    assert f"marked skip by hand: `{MAINLINE[1][:12]}` (known broken" in md


def test_skip_reason_is_whole_and_its_output_is_a_code_block(tmp_path: Path) -> None:
    md = render_markdown(sample_report(tmp_path))
    assert "`make quick-release KUBE_FASTBUILD=true` exited with code 2" in md
    assert "  ```\n  compiling k8s.io/apiserver\n" in md
    assert "make: \\*\\*\\*" not in md.split("  ```")[1]  # code blocks are not escaped
    assert "[build.log](evals/005/build.log)" in md  # relative to the report
    assert SKIP_REASON.split(": ")[0] in md


def test_timeline_rows_in_measurement_order_with_why_and_notes(tmp_path: Path) -> None:
    md = render_markdown(sample_report(tmp_path))
    rows = [line for line in md.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [int(r.split("|")[1]) for r in rows] == list(range(1, 12))
    assert "why 7" in rows[6] and "stopped early: conflicts 2450 >= 100" in rows[6]
    assert "cached: reused" in rows[5] and "launched 2 times" in rows[7]
    assert "TEARDOWN FAILED: kind delete cluster" in rows[8]
    assert BRANCH[1][:12] in rows[9] and "1m50s from 06-02 05:51:10" in rows[9]


def test_parallel_runs_name_their_slot_and_days_show_when_the_run_spans_them(
    tmp_path: Path,
) -> None:
    report = sample_report(tmp_path)
    report.search = replace(report.search, parallel=2)
    last = report.evaluations[-1]
    report.evaluations[-1] = replace(last, slot=1, started_at=last.started_at + 86400)
    md = render_markdown(report)
    rows = [line for line in md.splitlines() if re.match(r"\| \d+ \|", line)]
    assert "| 06-02 05:52:40 |" in rows[0] and "| 06-03 06:09:20 |" in rows[10]
    assert "slot 1" in rows[10] and "slot 0" in rows[0]


def test_each_evaluation_row_says_the_share_of_the_load_that_ran(tmp_path: Path) -> None:
    # Issue 30, item 5: the delivered load's share is stated for every evaluation that
    # counted it, from the measurement (journal) through the report's row.
    from bisector.bisection.report_builder import evaluation_of
    from bisector.measure.measurement import Measurement

    said = "290 of the ~300 watch events (node status writes) offered (97%); at least 50% needed"
    m = Measurement(MAINLINE[1], "", "bisect", value=3.0, load_fraction=0.97, load=said)
    row = evaluation_of(1, Measurement.from_dict(m.to_dict()), "subject", 100.0, False)
    assert row.load == said
    report = sample_report(tmp_path)
    report.evaluations = [replace(report.evaluations[0], load=said), *report.evaluations[1:]]
    rows = [line for line in render_markdown(report).splitlines() if line.startswith("| 1 |")]
    assert f"load: {said}" in rows[0]


def test_a_mark_says_whether_the_search_took_it_and_the_skips_add_up(tmp_path: Path) -> None:
    # After `bisector mark 9af6e30 skip` and a rerun whose search never picked 9af6e30,
    # report.md said "marked skip by hand: 9af6e3071206 ..." and then "No commit was
    # skipped.": each true, together a contradiction.
    report = sample_report(tmp_path)
    no_skip_runs = [e for e in report.evaluations if e.verdict != "skip"]
    marked = MAINLINE[1]
    never_picked = render_markdown(replace(report, evaluations=no_skip_runs))
    assert (
        f"- marked skip by hand: `{marked[:12]}` (known broken: does not boot); the search never "
        "picked that commit, so the mark decided nothing"
    ) in never_picked
    assert "No commit was skipped." in never_picked
    taken = render_markdown(replace(report, evaluations=no_skip_runs, verdicts={marked: "skip"}))
    assert "; the search took it as skip" in taken
    assert "No commit was skipped." not in taken
    assert f"No run was a skip; skipped by hand (marked above): {marked[:12]}." in taken
