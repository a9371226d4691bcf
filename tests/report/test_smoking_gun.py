"""The smoking gun: the culprit's run against its parent's, of the run's own metric."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bisector.report.model import Report, Threshold
from bisector.report.render import render_markdown
from bisector.report.smoking_gun import comparison, gun_svg, pick_run, smoking_gun
from tests.helpers.sample_report import BRANCH, sample_report


def test_confirmation_runs_are_drawn_culprit_first(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    gun = smoking_gun(report)
    assert [(s.role, s.evaluation.n) for s in gun.sides] == [("culprit", 10), ("parent", 11)]
    culprit, parent = gun.sides
    assert culprit.series is not None and parent.series is not None
    assert int(culprit.series.conflicts.sum()) == 20 * 90 and not parent.series.conflicts.any()
    assert max(culprit.series.cacher.values()) == 100
    svg = gun_svg(gun)
    assert svg is not None
    assert "node PATCH 409 conflicts / min" in svg and "saturated" in svg
    assert culprit.label in svg and parent.label in svg


def test_a_run_whose_logs_are_gone_is_not_picked(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    assert pick_run(report, BRANCH[1]) is not None
    for log in (tmp_path / "evals/010/logs").iterdir():
        log.unlink()
    assert pick_run(report, BRANCH[1]) is None  # run 9 has no logs either
    gun = smoking_gun(report)
    assert [s.role for s in gun.sides] == ["parent"]
    assert "no readable log for culprit" in gun.note


def test_without_a_culprit_the_endpoints_are_compared(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    report.culprit = None
    gun = smoking_gun(report)
    assert gun.sides == [] and "bad endpoint against the good one" in gun.note
    assert gun_svg(gun) is None


def test_comparison_rows_come_from_the_scorer_numbers(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    header, rows = comparison(smoking_gun(report))
    assert header[1].startswith("culprit ") and header[2].startswith("parent ")
    assert rows == [["node PATCH 409 conflicts", "2,350", "12.5"]]


def test_a_log_that_cannot_be_read_is_named_and_the_rest_still_drawn(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    (log,) = (tmp_path / "evals/010/logs").iterdir()
    log.write_bytes(b"\x1f\x8b\x08\x00garbage, not a gzip stream")
    gun = smoking_gun(report)
    assert [s.role for s in gun.sides] == ["parent"]
    assert "no readable log for culprit" in gun.note and "gzip" in gun.note


def _goroutine_hunt(tmp_path: Path) -> Report:
    """The sample report as a hunt whose metric is the apiserver's goroutines (a /metrics
    gauge): the culprit's confirmation run read 412 at the warmup's end (301 at its start),
    its parent's 302 (300); both logs still count 0 node PATCH 409s."""
    report = sample_report(tmp_path)
    report.metric = "apiserver_goroutines"
    report.threshold = Threshold(350.0, "calibrated: midpoint", "higher")
    readings = {10: (301.0, 412.0), 11: (300.0, 302.0)}
    evaluations = []
    for e in report.evaluations:
        if e.n in readings:
            start, end = readings[e.n]
            logs = f"{tmp_path}/evals/{e.n:03d}/logs"
            source = {
                "source": "prometheus",
                "from": f"{logs}/metrics-before.prom -> {logs}/metrics-after.prom go_goroutines",
                "at_start": start,
            }
            metrics = {"conflicts": 0, "apiserver_goroutines": end, "sources": {
                "apiserver_goroutines": source}}  # fmt: skip
            evaluations.append(replace(e, value=end, metrics=metrics))
        else:
            evaluations.append(e)
    report.evaluations = evaluations
    return report


def test_the_gun_is_the_runs_own_metric_and_its_readings_not_the_logs_409s(
    tmp_path: Path,
) -> None:
    gun = smoking_gun(_goroutine_hunt(tmp_path))
    assert [(s.role, s.evaluation.n) for s in gun.sides] == [("culprit", 10), ("parent", 11)]
    assert gun.note == (
        "the culprit against its parent: the run's metric apiserver_goroutines "
        "(prometheus readings)"
    )
    _, rows = comparison(gun)
    assert rows == [
        ["apiserver_goroutines", "412", "302"],
        ["at the warmup's start", "301", "300"],
        ["read from"] + ["metrics-before.prom -> metrics-after.prom go_goroutines"] * 2,
    ]
    svg = gun_svg(gun)
    assert svg is not None
    assert "apiserver_goroutines" in svg and "409" not in svg and "cacher" not in svg
    assert gun.sides[0].label in svg and "threshold" in svg
    text = render_markdown(_goroutine_hunt(tmp_path))
    gun_section = text[text.index("## Smoking gun") :]
    assert "node PATCH 409" not in gun_section.split("\n## ")[0]


def test_a_metric_run_whose_logs_are_gone_still_has_its_gun(tmp_path: Path) -> None:
    report = _goroutine_hunt(tmp_path)
    for log in (tmp_path / "evals/010/logs").iterdir():
        log.unlink()
    assert [s.role for s in smoking_gun(report).sides] == ["culprit", "parent"]
