"""`bisector demo`: the synthetic 2017 history bisected end to end, and its bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.commands.demo import MARKER, prepare_dir
from bisector.errors import BisectorError
from bisector.numbers import format_threshold, format_value
from bisector.sim.demo_repo import create_demo_repo

ROOT = Path(__file__).resolve().parents[2]


def _demo(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "bisector", "demo", *args]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # the package, from any working directory
    return subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd, env=env)


@pytest.mark.slow
def test_demo_names_the_planted_commit_not_its_merge_nor_the_prs_first(tmp_path: Path) -> None:
    # The history is deterministic for a seed: an independent copy tells the planted commit.
    expected = create_demo_repo(tmp_path / "expected", seed=0, prs=16)
    where = tmp_path / "demo"
    # Smaller than the default (5000 nodes, 2m, 40 PRs) to keep the test short; 3000 nodes
    # for 1m still show ~10^3x the healthy conflicts.
    argv = ["--dir", str(where), "--nodes", "3000", "--duration", "1m", "--prs", "16"]
    result = _demo(*argv)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((where / "run" / "report.json").read_text())
    culprit = report["culprit"]
    assert culprit["commit"] == expected.culprit
    assert expected.culprit not in (expected.culprit_merge, expected.culprit_pr_first)
    assert culprit["confirmed"] is True
    assert culprit["pr"] == expected.culprit_pr == 46588
    assert culprit["merge"]["commit"] == expected.culprit_merge
    assert report["first_parent"] is True and report["backend"] == "sim"
    assert report["good"]["commit"] == expected.good and report["bad"]["commit"] == expected.bad
    out = result.stdout
    assert f"demo directory: {where}" in out
    # The answer first: the summary opens with the culprit and whether it was confirmed.
    summary = out[out.index("\n\n") + 2 :].splitlines()
    assert summary[0] == (
        f"culprit: {expected.culprit} Optimize selector for single-matching items; confirmed"
    )
    # Without a terminal or -v: one line per evaluation (commit, verdict, value, time) and
    # what the search concluded; no phase changes, builds ahead or progress lines (the
    # demo printed 118 lines, 40 about prefetching, its answer after 255 lines of log).
    said = result.stderr.splitlines()
    assert not [ln for ln in said if re.search(r" begins\b|prefetch|evaluating \|", ln)], said
    evaluation = re.compile(
        r"bisector: ([0-9a-f]{12}) (?:(?:good|bad): )?(?:conflicts [\d,]+|skip)"
    )
    lines_of = [m[1] for ln in said if (m := evaluation.match(ln))]
    measured = [e["commit"][:12] for e in report["evaluations"]]
    assert sorted(lines_of) == sorted(measured), said
    assert len(said) <= len(measured) + 8, said
    assert f"PR #46588, merged as {expected.culprit_merge[:12]}" in out
    good, bad = report["good"]["value"], report["bad"]["value"]
    assert bad > 100 * max(good, 1)  # the regression shows by orders of magnitude
    assert f"conflicts at good {expected.good[:12]}: {format_value(good, 'conflicts')}" in out
    assert f"conflicts at bad  {expected.bad[:12]}: {format_value(bad, 'conflicts')}" in out
    threshold = format_threshold(report["threshold"]["value"], "conflicts")
    assert f"threshold {threshold} (calibrated: " in out
    parent = culprit["parent"]
    assert parent["commit"] == expected.culprit_pr_first
    value = format_value(culprit["value"], "conflicts")
    assert f"culprit {value} vs its parent {parent['commit'][:12]}" in out
    # The culprit is its merge's twin (same tree): its verdict says where it came from.
    if any(e["commit"] == expected.culprit_merge for e in report["evaluations"]):
        twin = f"{expected.culprit[:12]} is bad (same tree as {expected.culprit_merge[:12]}, "
        assert twin in result.stderr
        # Its figure is explained where it stands: the merge's run stopped early.
        merge_runs = [e for e in report["evaluations"] if e["commit"] == expected.culprit_merge]
        if any(e["stopped_early"] for e in merge_runs):
            line = next(ln for ln in out.splitlines() if "the same source tree" in ln)
            assert "in a search run stopped early (" in line, line
    assert "disk: " in out and list((where / "run").glob("evals/*/logs/kube-apiserver.log.gz"))
    assert f"{len(report['evaluations'])} evaluations over 15 first-parent commits" in out
    assert "skipped" in out
    assert str(where / "run" / "report.md") in out
    for name in ("report.md", "report.html", "journal.jsonl"):
        assert (where / "run" / name).is_file()
    assert (where / "demo.toml").is_file() and (where / MARKER).is_file()


def _assert_one_line_exit_2(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("bisector: error: ")
    assert result.stderr.count("\n") == 1, result.stderr
    assert needle in result.stderr


def test_refuses_a_directory_that_holds_something_else(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me\n")
    result = _demo("--dir", str(tmp_path))
    _assert_one_line_exit_2(result, f"{tmp_path} is not empty and holds no earlier demo")
    assert "pass --dir with a new or empty directory" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]  # nothing lost, nothing added
    assert (tmp_path / "mine.txt").read_text() == "keep me\n"


def test_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("x")
    _assert_one_line_exit_2(_demo("--dir", str(target)), f"{target} is a file")
    assert target.read_text() == "x"


def test_refuses_a_directory_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(BisectorError, match="cannot create"):
        prepare_dir(tmp_path / "a-file" / "demo")
    assert (tmp_path / "a-file").read_text() == "x"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--nodes", "5"), "--nodes must be at least 10"),
        (("--duration", "soon"), "--duration: cannot read 'soon' as a duration"),
        (("--duration", "10s"), "--duration must be at least 30s"),
        (("--prs", "3"), "--prs must be at least 12"),
    ],
)
def test_bad_numbers_are_one_line_and_create_nothing(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    where = tmp_path / "demo"
    _assert_one_line_exit_2(_demo("--dir", str(where), *args), needle)
    assert not where.exists()


def test_an_earlier_demo_is_replaced_and_a_new_or_empty_dir_is_used(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier"
    (earlier / "run").mkdir(parents=True)
    (earlier / MARKER).write_text("{}\n")
    (earlier / "run" / "report.md").write_text("old\n")
    assert prepare_dir(earlier) == earlier.resolve()
    assert list(earlier.iterdir()) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prepare_dir(empty) == empty.resolve()
    fresh = tmp_path / "a" / "b"
    assert prepare_dir(fresh).is_dir()
    (fresh / "x").write_text("y")
    with pytest.raises(BisectorError, match="holds no earlier demo"):
        prepare_dir(fresh)


def test_default_directory_is_bisector_demo_under_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "bisector-demo").mkdir()
    (tmp_path / "bisector-demo" / "other").write_text("not a demo\n")
    result = _demo(cwd=tmp_path)
    _assert_one_line_exit_2(result, f"{tmp_path / 'bisector-demo'} is not empty")


@pytest.mark.slow
def test_demo_with_two_culprits_names_both_each_confirmed_with_its_share(tmp_path: Path) -> None:
    # The default history (40 PRs, 5000 nodes for 2m): the second regression is sized
    # for it (bisector.demo_repo.SECOND_DISPATCH_BASE_US).
    expected = create_demo_repo(tmp_path / "expected", seed=0, second_culprit=True)
    assert expected.second_culprit is not None
    where = tmp_path / "demo"
    result = _demo("--dir", str(where), "--culprits", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((where / "run" / "report.json").read_text())
    first, second = report["culprits"]
    assert (first["commit"], second["commit"]) == (expected.second_culprit, expected.culprit)
    assert first["confirmed"] and second["confirmed"]
    # The earlier, smaller one explains a small part; its revert leaves the bad end bad.
    assert first["revert"]["outcome"] == "does not restore" and first["share"] < 0.2
    assert second["revert"]["outcome"] == "restores" and second["share"] > 0.8
    assert second["hunt"] == 2 and second["reverted"] == [expected.second_culprit]
    assert report["unexplained"] == ""
    out = result.stdout
    assert "two regressions planted" in out
    assert "these are the two commits the demo planted, each confirmed" in out
    assert f"Culprit 2: {expected.culprit}" in out


def test_demo_refuses_more_culprits_than_it_can_plant(tmp_path: Path) -> None:
    result = _demo("--dir", str(tmp_path / "d"), "--culprits", "3")
    assert result.returncode == 2
    assert result.stderr.strip() == "bisector: error: --culprits must be 1 or 2, got 3"
    assert not (tmp_path / "d").exists()
