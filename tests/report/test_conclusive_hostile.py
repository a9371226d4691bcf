"""What a run without one culprit established, said with hostile text in it (a mark's note
over several lines, markup in subjects, a run directory with a space) and with advice that
must hold: no command that does not do what it says, no mark silently dropped."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

from bisector.report.action import action_lines
from bisector.report.conclusive import established, lead_lines, next_steps
from bisector.report.model import Mark, Report
from bisector.report.render import render_html, render_markdown
from tests.helpers.sample_report import MAINLINE, evaluation, inconclusive_report

NOTE = "boots, then\n```\n<script>alert(1)</script>\n| a | b |\n`make` hangs"


def _said(report: Report) -> Report:
    report = replace(report, conclusive=established(report))
    return replace(report, action=action_lines(report))


def _with_note(tmp_path: Path) -> Report:
    report = inconclusive_report(tmp_path)
    return _said(replace(report, marks=[Mark(MAINLINE[1], "skip", NOTE)]))


def _fenced(markdown: str, heading: str) -> list[str]:
    """The lines of the first fenced block after `heading`."""
    lines = markdown.splitlines()
    start = lines.index("```", lines.index(heading)) + 1
    return lines[start : lines.index("```", start)]


def test_a_note_over_several_lines_stays_inside_the_action_block(tmp_path: Path) -> None:
    report = _with_note(tmp_path)
    assert all("\n" not in line for line in report.action)
    markdown = render_markdown(report)
    # A line "```" of the note would end the block; what follows would be read as Markdown.
    assert _fenced(markdown, "## What to do") == report.action
    (said,) = [line for line in report.action if line.strip().startswith(MAINLINE[1][:12])]
    assert said.endswith("marked skip by hand: boots, then ``` <script>alert(1)</script> "
                         "| a | b | `make` hangs")  # fmt: skip
    # The lead of report.md, a line of its own, escapes it.
    assert "\\<script>" in markdown.split("## What to do")[0]


def test_markup_in_a_note_or_subject_is_escaped_in_report_html(tmp_path: Path) -> None:
    report = _with_note(tmp_path)
    evaluations = [
        replace(e, subject="<script>alert(2)</script> | `x`") if e.commit == MAINLINE[2] else e
        for e in report.evaluations
    ]
    report = _said(replace(report, evaluations=evaluations))
    html = render_html(report)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert "\\<script>alert(2)" in render_markdown(report)


def test_the_summarys_lines_are_one_line_each(tmp_path: Path) -> None:
    report = _with_note(tmp_path)
    assert all("\n" not in line for line in lead_lines(report))


def test_a_commit_skipped_by_hand_is_not_said_to_be_measured_again(tmp_path: Path) -> None:
    """m1 failed on the machine once (an infrastructure skip) and was then marked skip by
    hand: the same command again takes the mark, it does not measure m1 again."""
    report = inconclusive_report(tmp_path)
    m1 = MAINLINE[1]
    lost = evaluation(7, m1, "bisect", None, infra_skip=True, reason="executor: pod lost")
    report = _said(replace(report, evaluations=[*report.evaluations, lost]))
    steps = next_steps(report)
    assert not any(s.startswith("run the same command again") and m1[:12] in s for s in steps)
    assert any(s.startswith(f"{m1[:12]}") and "cannot be measured here" in s for s in steps)


def test_search_longer_with_fresh_says_the_marks_it_sets_aside(tmp_path: Path) -> None:
    """--fresh moves the journal, and the marks in it, to earlier/: a person who marked
    commits (as the step before says to) must mark them again, or the new run measures
    them as if never marked."""
    report = inconclusive_report(tmp_path)
    m1, m2 = MAINLINE[1:3]
    marks = [Mark(m1, "skip", "does not boot"), Mark(m2, "bad", "measured by hand"),
             Mark(m2, "good", "measured again")]  # fmt: skip
    report = replace(_said(replace(report, marks=marks)), status="unsure")
    fresh = next_steps(report)[-1]
    assert fresh.startswith("search longer: the same command with --fresh")
    run_dir = shlex.quote(report.run_dir)
    assert f"`bisector mark {m1[:12]} skip --run-dir {run_dir}`" in fresh
    # Each commit's latest mark only.
    assert f"`bisector mark {m2[:12]} good --run-dir {run_dir}`" in fresh
    assert f"{m2[:12]} bad" not in fresh


def test_commands_said_quote_a_run_dir_and_paths_with_spaces(tmp_path: Path) -> None:
    report = inconclusive_report(tmp_path)
    report = _said(replace(report, run_dir=str(tmp_path / "my runs" / "x"), paths=["pkg/a b"]))
    steps = next_steps(report)
    commands = [c for s in steps for c in re.findall(r"`([^`]+)`", s)]
    mark = next(c for c in commands if c.startswith("bisector mark"))
    assert shlex.split(mark)[-2:] == ["--run-dir", str(tmp_path / "my runs" / "x")]
    log = next(c for c in commands if c.startswith("git log"))
    assert shlex.split(log)[-2:] == ["--", "pkg/a b"]
