"""The end-of-run evidence printed by run, demo and nightly."""

from __future__ import annotations

from pathlib import Path

from bisector.report.render import render_html, render_markdown
from bisector.report.summary import summary_lines
from tests.helpers.sample_report import BRANCH, MAINLINE, evaluation, sample_report


def test_summary_carries_the_evidence(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    lines = summary_lines(report)
    text = "\n".join(lines)
    assert lines[0].startswith(f"TEARDOWN FAILED for {BRANCH[1][:12]}: kind delete cluster")
    assert f"culprit: {BRANCH[1]} Optimize selector for single-matching items; confirmed" in lines
    assert f"  PR #46588, merged as {MAINLINE[4][:12]}; author wojtek-t" in text
    assert "evidence:" in lines
    assert f"  conflicts at good {MAINLINE[0][:12]}: 11 (2 runs: 10, 12)" in lines
    assert f"  conflicts at bad  {MAINLINE[7][:12]}: 2,450 (2 runs: 2,400, 2,500)" in lines
    assert "  threshold 100 (given)" in lines
    assert (
        f"  culprit 2,350 vs its parent {BRANCH[0][:12]} 12.5; "
        "confirmed by measuring both again: yes"
    ) in lines
    assert (
        "    every run: culprit 2,300 (bisect), 2,350 (confirm); parent 13 (bisect), 12.5 (confirm)"
        in lines
    )
    assert "  confidence: not modelled (plain git bisect verdicts, no error rate given)" in lines
    assert "  11 evaluations over 7 first-parent commits, 1 skipped" in lines
    skip = next(i for i, line in enumerate(lines) if line.startswith("  skipped "))
    assert lines[skip].endswith("`make quick-release KUBE_FASTBUILD=true` exited with code 2")
    assert lines[skip + 1 : skip + 4] == [
        "    | compiling k8s.io/apiserver",
        "    | pkg/storage/cacher.go:566: undefined: watchCacheCapacity",
        "    | make: *** [quick-release] Error 1",
    ]
    assert (
        f"  marked skip by hand: {MAINLINE[1][:12]} (known broken: does not boot); the search "
        "never picked that commit, so the mark decided nothing"
    ) in lines
    assert lines[-1] == f"report: {tmp_path / 'report.md'} and {tmp_path / 'report.html'}"
    assert lines[-2].startswith("disk: ") and f" in {tmp_path}, of which logs " in lines[-2]


def test_a_commit_measured_after_a_failed_run_is_not_counted_as_skipped(tmp_path: Path) -> None:
    # The culprit's parent failed to launch in its confirmation run (a skip of that run),
    # and had been measured in the search: the summary counted it as a skipped commit.
    report = sample_report(tmp_path)
    parent = BRANCH[0]
    failed = evaluation(12, parent, "confirm", None, reason="launch failed (etcd did not start)")
    report.evaluations.append(failed)
    lines = summary_lines(report)
    assert (
        "  12 evaluations over 7 first-parent commits, 1 skipped, "
        "1 failed run of commits measured again"
    ) in lines
    assert (
        f"  a run of {parent[:12]} {failed.subject} failed: launch failed (etcd did not start); "
        "measured in another run: 13 (bisect), 12.5 (confirm)"
    ) in lines
    assert not any(line.startswith(f"  skipped {parent[:12]}") for line in lines)
    md = render_markdown(report)
    assert (
        f"- #12 `{parent[:12]}` {failed.subject}: launch failed (etcd did not start) "
        "(measured in another run: 13 (bisect), 12.5 (confirm))"
    ) in md
    assert "(measured in another run: 13 (bisect), 12.5 (confirm))" in render_html(report)


def test_a_same_tree_figure_says_its_run_stopped_early(tmp_path: Path) -> None:
    """ "the merge has the same source tree and measured 3,927" beside the culprit's
    178,004 was explained only in the report's timeline: that run stopped early."""
    from dataclasses import replace

    report = sample_report(tmp_path)
    said = f"same tree as {MAINLINE[4][:12]}, measured there: 2,450"
    report = replace(report, same_tree_verdicts={BRANCH[1]: said})
    line = next(ln for ln in summary_lines(report) if "the same source tree" in ln)
    assert line.endswith(
        "measured 2,450, in a search run stopped early (conflicts 2450 >= 100): a part of "
        "the warmup, not comparable with the full-length runs above"
    ), line
