"""report.json's `conclusive` read back: a report written before it, or with it garbled or
from another version, still reads (`bisector status`, `runs --prune`, the nightly's
evidence read the rest of it); a conclusive read back says only what it claims to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bisector.report import report_of
from bisector.report.conclusive import established
from bisector.report.model import Report
from bisector.report.render import render_html, render_markdown
from bisector.report.smoking_gun import drawn_log_dirs
from bisector.report.summary import summary_lines
from tests.helpers.sample_report import inconclusive_report


def _written(tmp_path: Path) -> dict[str, Any]:
    report = inconclusive_report(tmp_path)
    report.conclusive = established(report)
    data: dict[str, Any] = json.loads(json.dumps(report.to_json(), default=str))
    assert data["conclusive"]["last_good"]["commit"]
    return data


def test_a_report_from_before_the_field_reads_without_it(tmp_path: Path) -> None:
    data = _written(tmp_path)
    del data["conclusive"]
    report = Report.from_json(data)
    assert report.conclusive is None
    assert summary_lines(report) and render_markdown(report) and render_html(report)


GARBLED = [
    ("last_good missing", lambda c: c.pop("last_good")),
    ("a bound not a table", lambda c: c.update(first_bad="0123abcd")),
    ("a bound without its commit", lambda c: c["last_good"].pop("commit")),
    ("a commit a number", lambda c: c["first_bad"].update(commit=12345)),
    ("a value a string", lambda c: c["last_good"].update(value="eleven")),
    ("a run a string", lambda c: c["last_good"].update(runs=["10", 12.0])),
    ("between not a list", lambda c: c.update(between=7)),
    ("a commit between a string", lambda c: c.update(between=["abc"])),
    ("a probability a string", lambda c: c.update(probability="high")),
    ("a probability true", lambda c: c.update(probability=True)),
    ("unmeasured of numbers", lambda c: c.update(unmeasured=[1, 2])),
    ("a list", lambda c: c.clear() or c.update(x=1)),
]


@pytest.mark.parametrize(("what", "garble"), GARBLED, ids=[g[0] for g in GARBLED])
def test_a_garbled_conclusive_leaves_the_rest_of_the_report_readable(
    tmp_path: Path, what: str, garble: Any
) -> None:
    data = _written(tmp_path)
    garble(data["conclusive"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps(data), encoding="utf-8")
    report = report_of(run_dir)
    assert report is not None, what  # else `runs --prune` drops the logs the report draws
    assert report.conclusive is None
    assert report.evaluations and report.verdicts
    assert drawn_log_dirs(report) == drawn_log_dirs(Report.from_json(_written(tmp_path)))
    assert summary_lines(report) and render_markdown(report) and render_html(report)


def test_a_conclusive_from_a_newer_version_with_more_keys_reads(tmp_path: Path) -> None:
    data = _written(tmp_path)
    data["conclusive"]["since"] = "v9"
    data["conclusive"]["last_good"]["confidence"] = 0.9
    data["conclusive"]["between"][0]["tried"] = 3
    report = Report.from_json(data)
    assert report.conclusive is not None
    assert report.conclusive == established(inconclusive_report(tmp_path))


def test_nan_and_huge_values_are_said_not_crashed_on(tmp_path: Path) -> None:
    data = _written(tmp_path)
    data["conclusive"]["last_good"]["value"] = float("nan")
    data["conclusive"]["first_bad"]["value"] = 1e308
    data["conclusive"]["first_bad"]["runs"] = [1e308, float("inf")]
    report = Report.from_json(json.loads(json.dumps(data)))
    assert report.conclusive is not None
    lines = summary_lines(report)
    assert "nan" in lines[0]
    assert render_markdown(report) and render_html(report)
