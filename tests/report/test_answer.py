"""Each culprit's revert check, share and profile diff, and what to do, in report.md,
report.html and report.json alike (bisector.report.answer)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from bisector.pprof import grown, parse_top
from bisector.report.action import action_lines
from bisector.report.answer import profile_row
from bisector.report.model import ProfileDiff, Report, RevertCheck
from bisector.report.render import render_both
from tests.helpers.sample_report import MAINLINE, sample_report

DATA = Path(__file__).parents[1] / "data" / "pprof"
CACHER = "staging/src/k8s.io/apiserver/pkg/storage/cacher.go"
TAG = re.compile(r"</?[A-Za-z][^>\s]*[^>]*>")


def _report(tmp_path: Path, outcome: str = "restores") -> Report:
    report = sample_report(tmp_path)
    culprit = report.culprit
    assert culprit is not None
    text = (DATA / "cpu-diff-go1.19.8.txt").read_text()
    diff = ProfileDiff(
        kind="cpu",
        culprit=str(tmp_path / "evals/010/profiles/cpu.pprof"),
        parent=str(tmp_path / "evals/011/profiles/cpu.pprof"),
        command="go tool pprof -top -diff_base=... ...",
        go="/usr/lib/go-1.19/bin/go",
        rows=grown(parse_top(text, [CACHER])),
        total="Showing nodes accounting for 9060ms, 6471.43% of 140ms total",
        text=str(tmp_path / "profiles/cpu-cpu-diff.txt"),
    )
    values = {"restores": (12.0, "good"), "does not restore": (2200.0, "bad")}[outcome]
    revert = RevertCheck(
        base=MAINLINE[7],
        reverted=[culprit.commit],
        built="f" * 40,
        outcome=outcome,
        verdict=values[1],
        value=values[0],
        runs=[values[0]],
    )
    share = 0.995 if outcome == "restores" else 0.1
    culprit = replace(culprit, revert=revert, share=share, share_basis="revert", profiles=[diff])
    report = replace(report, culprit=culprit, culprits=[culprit])
    if outcome != "restores":
        report.unexplained = "the bad endpoint with m... reverted still measures bad"
    report.action = action_lines(report)
    return report


def test_each_report_says_the_revert_check_the_share_and_what_grew(tmp_path: Path) -> None:
    report = _report(tmp_path)
    md, html = render_both(report)
    for page in (md, html):
        assert "Revert check" in page and "the revert restores the good value" in page
        assert "Share of the regression" in page and "100% of the step" in page
        # The real diff's top function, and the culprit's own file's function marked.
        assert "runtime.memmove" in page and "+2310ms" in page
        assert "main.dispatchEvent" in page
        assert "What to do" in page and "git revert" in page
    # The profile files are linked relative to the run directory the reports lie in.
    assert "](evals/010/profiles/cpu.pprof)" in md and "](profiles/cpu-cpu-diff.txt)" in md
    assert 'href="evals/011/profiles/cpu.pprof"' in html
    assert '<tr class="culprit">' in html  # the culprit's function's row is marked
    assert "cacher.go (in the culprit's change)" in md
    assert "cacher.go (in the culprit&#x27;s change)" in html
    # No HTML outside the fenced action block (an author's <address> is text there).
    assert not TAG.search(re.sub(r"```.*?```", "", md, flags=re.S).replace("\\<", ""))
    # The sections in reading order: the answer after the culprit, what to do last.
    order = ["## Culprit", "Revert check", "## Evidence", "## Run", "## What to do"]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)


def test_the_action_block_carries_the_profile_evidence(tmp_path: Path) -> None:
    lines = _report(tmp_path).action
    (profile,) = [line for line in lines if "profile diff (cpu)" in line]
    assert "runtime.memmove +2310ms" in profile
    # The fixture's program lies in one file, the culprit's: its callers are marked too.
    mine = profile.split("; in its files: ")[1]
    assert "main.dispatchEvent +6850ms" in mine and "runtime." not in mine


def test_a_revert_that_does_not_restore_is_said_loudly(tmp_path: Path) -> None:
    report = _report(tmp_path, "does not restore")
    md, html = render_both(report)
    assert "the revert does NOT restore the good value" in md
    assert "**Not all explained**" in md
    assert '<p class="alarm"><strong>Revert check</strong>' in html
    assert "it explains only part of the regression" in md


def test_report_json_keeps_every_culprits_evidence(tmp_path: Path) -> None:
    report = _report(tmp_path)
    data = json.loads(json.dumps(report.to_json()))
    (culprit,) = data["culprits"]
    assert culprit["revert"]["outcome"] == "restores" and culprit["share"] == 0.995
    (cpu,) = culprit["profiles"]
    assert cpu["kind"] == "cpu" and cpu["rows"][0]["function"] == "runtime.memmove"
    assert cpu["rows"][0]["flat_value"] == 2.31
    assert any(r["in_culprit"] for r in cpu["rows"])
    assert data["action"] == report.action
    back = Report.from_json(data)
    assert back.culprits[0].profiles == report.culprits[0].profiles
    assert back.culprits[0].revert == report.culprits[0].revert


def test_no_profiles_is_said_not_hidden(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert report.culprit is not None
    culprit = replace(report.culprit, profiles=[])
    md, _ = render_both(replace(report, culprit=culprit, culprits=[culprit]))
    assert "**Profiles**: none taken" in md


def test_a_row_reads_as_its_package_and_memory_in_a_readable_unit() -> None:
    (row,) = parse_top(
        "401709.77kB 54.34% 54.34% 409253552B 54.34%  "
        "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/storage.newCacheWatcher "
        "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/storage/cacher.go"
    )
    assert profile_row(row) == [
        "+401.7MB",
        "+409.3MB",
        "k8s.io/apiserver/pkg/storage.newCacheWatcher",
        "k8s.io/apiserver/pkg/storage/cacher.go",
    ]
    (shrank,) = parse_top("-34219883B 4.54% 49.80% -512B 4.54%  bufio.NewWriterSize bufio/bufio.go")
    assert profile_row(shrank)[:2] == ["-34.2MB", "-512B"]
