"""The smoking gun: the culprit's run against its parent's, from their logs."""

from __future__ import annotations

from pathlib import Path

from bisector.report.smoking_gun import comparison, gun_svg, pick_run, smoking_gun
from tests.helpers.sample_report import BRANCH, sample_report


def test_confirmation_runs_are_drawn_culprit_first(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    gun = smoking_gun(report)
    assert [(s.role, s.evaluation.n) for s in gun.sides] == [("culprit", 10), ("parent", 11)]
    culprit, parent = gun.sides
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
