"""How each candidate was built: the build fixes and the tree's own build steps its build
applied (<eval>/build-fixes.json, written by the procs backend), in report.json's
evaluations and `adaptations`, and in report.md and report.html beside the culprit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bisector.bisection.report_builder import evaluation_of
from bisector.measure.measurement import Measurement
from bisector.report.adaptation import (
    FROM_CONFIG,
    FROM_TREE,
    BuildFixApplied,
    write_build_fixes,
)
from bisector.report.evidence import build_adaptations
from bisector.report.model import Report
from bisector.report.render import render_html, render_markdown
from tests.helpers.sample_report import BRANCH, sample_report

OPENAPI = BuildFixApplied(
    "generate-openapi",
    "build/root/Makefile.generated_files generates pkg/generated/openapi/zz_generated.openapi.go "
    "and does not commit it (not in verify_generated_files): ./vendor/k8s.io/code-generator/"
    "cmd/openapi-gen over the packages tagged +k8s:openapi-gen=",
    FROM_TREE,
    ["cd /gopath/src/k8s.io/kubernetes && bash -euo pipefail -c '...openapi-gen...'"],
)
# A file taken from another commit: what a confirmed culprit built this way must say.
BORROWED = BuildFixApplied(
    "compute-gen-from-f44bc995",
    "vendor/google.golang.org/api/compute/v0.alpha/compute-gen.go is absent from the mirror: "
    "taken from the nearest commit that has it",
    FROM_CONFIG,
    ["cd /wt && git apply /cfg/compute-gen.patch"],
    "from 43d2da04f9c2",
)


def _with_fixes(report: Report) -> Report:
    culprit, parent = BRANCH[1], BRANCH[0]
    report.evaluations = [
        replace(e, build_fixes=[OPENAPI, BORROWED] if e.commit == culprit else [OPENAPI])
        if e.commit in (culprit, parent)
        else e
        for e in report.evaluations
    ]
    report.adaptations = build_adaptations(report.evaluations)
    return report


def test_an_evaluation_reads_what_its_build_applied(tmp_path: Path) -> None:
    eval_dir = tmp_path / "evals" / "004-abc"
    write_build_fixes(eval_dir, [OPENAPI, BORROWED])
    m = Measurement("a" * 40, "", "bisect", value=3.0, eval_dir=str(eval_dir))
    row = evaluation_of(4, Measurement.from_dict(m.to_dict()), "subject", 1.0, False)
    assert row.build_fixes == [OPENAPI, BORROWED]
    none = Measurement("b" * 40, "", "bisect", value=3.0, eval_dir=str(tmp_path / "nothing"))
    assert evaluation_of(5, none, "s", 1.0, False).build_fixes == []


def test_report_json_lists_them_per_evaluation_and_once_in_adaptations(tmp_path: Path) -> None:
    report = _with_fixes(sample_report(tmp_path))
    names = [a.name for a in report.adaptations]
    assert names == ["build: generate-openapi", "build: compute-gen-from-f44bc995"]
    assert "(the builds of 2 of" in report.adaptations[0].why
    assert report.adaptations[1].why.startswith("configured, from 43d2da04f9c2: vendor/google")
    path = report.write_json(tmp_path)
    data = json.loads(path.read_text())
    culprit_runs = [e for e in data["evaluations"] if e["commit"] == BRANCH[1]]
    assert [f["name"] for f in culprit_runs[-1]["build_fixes"]] == [
        "generate-openapi",
        "compute-gen-from-f44bc995",
    ]
    assert data["adaptations"][0]["commands"] == OPENAPI.commands
    assert Report.read(path) == report


def test_the_culprit_says_it_was_built_with_a_file_from_another_commit(tmp_path: Path) -> None:
    report = _with_fixes(sample_report(tmp_path))
    md = render_markdown(report)
    culprit = md[md.index("## Culprit") : md.index("## Evidence")]
    assert (
        "- culprit `" + BRANCH[1][:12] + "` built with: generate-openapi (from the tree's own "
        "build), compute-gen-from-f44bc995 (configured fix)"
    ) in culprit
    assert "- its parent `" + BRANCH[0][:12] + "` built with: generate-openapi" in culprit
    assert "## What the kind backend added to the scripts and builds" in md
    assert "**build: compute-gen-from-f44bc995**" in md
    html = render_html(report)
    assert "culprit built with" in html and "compute-gen-from-f44bc995 (configured fix)" in html
    assert "build: generate-openapi" in html


def test_a_report_without_build_fixes_says_nothing_of_them(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    assert "built with" not in render_markdown(report)
    assert "built with" not in render_html(report)
