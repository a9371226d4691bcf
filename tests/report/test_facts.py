"""Skip reasons are cut where it is safe; texts every renderer shares."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bisector.report.facts import runs_text, split_reason, why_culprit
from tests.helpers.sample_report import BRANCH, MAINLINE, sample_report


def test_reason_keeps_the_quoted_command_whole_and_splits_its_output() -> None:
    # The shape proc.CommandError and backends.steps.tail give: `cmd` why: a | b | c.
    reason = split_reason(
        "`make quick-release KUBE_FASTBUILD=true` exited with code 2: a | b: c | d"
    )
    assert reason.summary == "`make quick-release KUBE_FASTBUILD=true` exited with code 2"
    assert reason.output == ["a", "b: c", "d"]


def test_reason_with_a_colon_inside_the_quoted_command_is_not_cut_there() -> None:
    reason = split_reason("build failed: `sh -c 'echo a: b; exit 3'` exited with code 3: boom")
    assert reason.summary == "build failed: `sh -c 'echo a: b; exit 3'` exited with code 3"
    assert reason.output == ["boom"]


def test_reason_without_quotes_splits_after_the_failure() -> None:
    reason = split_reason("make quick-release failed for abc (exited with code 2): x | y")
    assert reason.summary == "make quick-release failed for abc (exited with code 2)"
    assert reason.output == ["x", "y"]


def test_reason_that_is_no_command_failure_stays_whole() -> None:
    text = "log covers too little time: 30s of the 120s asked"
    assert split_reason(text).summary == text
    assert split_reason(text).output == []


def test_multi_line_reason_keeps_the_last_lines() -> None:
    reason = split_reason("launch failed\n" + "\n".join(f"line {i}" for i in range(20)), 3)
    assert reason.summary == "launch failed"
    assert reason.output == ["line 17", "line 18", "line 19"]


def test_runs_text_lists_every_run() -> None:
    assert runs_text([40.0]) == "1 run: 40"
    assert runs_text([10.0, 12.5, 11.0]) == "3 runs: 10, 12.5, 11"


def test_why_names_both_sides_runs_and_the_confirmation(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    why = why_culprit(report)
    assert why.startswith(f"Its parent {BRANCH[0][:12]} measured 13 and 12.5 (2 of 2 runs below")
    assert "this commit measured 2,300 and 2,350 (2 of 2 runs at or above it)" in why
    assert f"merge {MAINLINE[4][:12]}" in why and why.endswith("measuring both again agreed.")
    assert report.culprit is not None
    report.culprit = replace(report.culprit, confirmed=False)
    assert "did NOT agree" in why_culprit(report)
