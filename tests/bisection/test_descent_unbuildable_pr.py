"""A PR whose inner commits do not build still gets an answer (issue 40, item 1).

The first-parent search finds the PR's merge; inside the PR the commits between a good
and a bad one do not build (a dependency lands in a later commit of the same PR). The
answer a maintainer acts on: the merge is the culprit, confirmed against its first
parent, and inside it the first bad commit lies between X (good) and Y (bad), with
these commits unbuildable. Through the real `bisector run` (the local backend: a build
fails where the commit has a BROKEN file).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.local_backend import bisector_argv, write_local_config
from tests.helpers.repo import PR, BuiltRepo, build_repo

PR_NUMBER = 77


def _history(path: Path) -> BuiltRepo:
    # Mainline index 4 merges PR #77: good, two commits that do not build, then bad.
    return build_repo(
        path, [2, 2, 2, 2, 40, 40, 40], prs=[PR(4, [2, 40, 40, 40], PR_NUMBER, broken=[1, 2])]
    )


def _run(tmp_path: Path, built: BuiltRepo, *extra: str) -> subprocess.CompletedProcess[str]:
    driver = write_local_config(tmp_path / "cfg", run={"threshold": 10.0, "first_parent": True})
    argv = bisector_argv(
        "run", "--repo", str(built.path), "--config", str(driver.config),
        "--good", built.mainline[0], "--bad", built.mainline[-1],
        "--run-dir", str(tmp_path / "run"), *extra,
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_the_merge_is_the_confirmed_culprit_and_the_report_says_where_inside(
    tmp_path: Path,
) -> None:
    built = _history(tmp_path / "repo")
    merge = built.mainline[4]
    good_inside, broken_a, broken_b, bad_inside = built.pr_commits[PR_NUMBER]
    done = _run(tmp_path, built)
    assert "Traceback" not in done.stderr
    assert done.returncode == RunExit.FOUND, done.stdout + done.stderr
    out = done.stdout
    assert f"culprit: {merge} Merge pull request #{PR_NUMBER}" in out
    assert "no single culprit" not in out
    assert "confirmed by measuring both again: yes" in out
    assert (
        f"inside PR #{PR_NUMBER} the first bad commit lies after {good_inside[:12]} (good) and "
        f"at or before {bad_inside[:12]} (bad)"
    ) in out
    assert f"could not be measured (see the skips): {broken_a[:12]}, {broken_b[:12]}" in out
    assert f"revert: git revert -m 1 {merge}" in out

    report = json.loads((tmp_path / "run" / "report.json").read_text())
    culprit = report["culprit"]
    assert report["status"] == "found" and culprit["commit"] == merge
    assert culprit["confirmed"] is True and culprit["pr"] == PR_NUMBER
    assert culprit["inside"] == {
        "good": good_inside,
        "bad": bad_inside,
        "unmeasured": [broken_a, broken_b],
    }
    # Confirmed against its first parent only: the branch's tip is bad, not a good parent.
    assert set(culprit["confirmation"]) == {merge, built.mainline[3]}
    assert culprit["is_merge"] is True


@pytest.mark.slow
def test_json_carries_the_merge_and_where_inside(tmp_path: Path) -> None:
    built = _history(tmp_path / "repo")
    done = _run(tmp_path, built, "--json")
    assert done.returncode == RunExit.FOUND, done.stderr
    result = json.loads(done.stdout)
    assert result["exit_code"] == RunExit.FOUND
    culprit = result["report"]["culprit"]
    assert culprit["commit"] == built.mainline[4]
    assert culprit["inside"]["unmeasured"] == built.pr_commits[PR_NUMBER][1:3]
    assert result["report"]["culprits"][0]["commit"] == built.mainline[4]
