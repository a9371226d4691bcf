"""Descent into the culprit merge is recursive: a culprit that is itself a merge inside
the PR's branch is descended into too (issue 11), for both searches."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from bisector.bisection.descent import merge_path
from bisector.bisection.pipeline import run_bisection
from bisector.gitrepo import GitRepo
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _commit(repo: Path, value: int, subject: str) -> str:
    (repo / "value").write_text(f"{value}\n")
    (repo / "serial").write_text(f"{subject}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject)
    return _git(repo, "rev-parse", "HEAD")


def _merge(repo: Path, branch: str, value: int, subject: str) -> str:
    _git(repo, "merge", "-q", "--no-ff", "--no-commit", branch)
    return _commit(repo, value, subject)


def nested_history(repo: Path) -> dict[str, str]:
    """main: m0 m1 [M: merge of PR #7] m3 m4;  PR #7: a1 [N: merge of PR #8] a3;
    PR #8: b1 b2 (b2 is the culprit). Every commit after b2 in its history is bad."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "T")
    c: dict[str, str] = {}
    c["m0"] = _commit(repo, GOOD, "m0")
    c["m1"] = _commit(repo, GOOD, "m1")
    _git(repo, "checkout", "-q", "-b", "pr-7")
    c["a1"] = _commit(repo, GOOD, "PR 7: a1")
    _git(repo, "checkout", "-q", "-b", "pr-8")
    c["b1"] = _commit(repo, GOOD, "PR 8: b1")
    c["b2"] = _commit(repo, BAD, "PR 8: b2 drops the trigger index")
    _git(repo, "checkout", "-q", "pr-7")
    c["N"] = _merge(repo, "pr-8", BAD, "Merge pull request #8 from dev/pr-8")
    c["a3"] = _commit(repo, BAD, "PR 7: a3")
    _git(repo, "checkout", "-q", "main")
    c["M"] = _merge(repo, "pr-7", BAD, "Merge pull request #7 from dev/pr-7")
    c["m3"] = _commit(repo, BAD, "m3")
    c["m4"] = _commit(repo, BAD, "m4")
    return c


@pytest.mark.slow
@pytest.mark.parametrize("error_rate", [0.0, 0.05], ids=["git-bisect", "posterior"])
def test_a_merge_inside_the_pr_branch_is_descended_into(tmp_path: Path, error_rate: float) -> None:
    c = nested_history(tmp_path / "repo")
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=c["m0"],
        bad=c["m4"],
        repo=tmp_path / "repo",
        threshold=10.0,
        first_parent=True,
        error_rate=error_rate,
    )
    report = run_bisection(
        settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO())
    )
    assert report.culprit is not None
    assert report.culprit.commit == c["b2"]
    assert report.culprit.confirmed
    merges = [m.commit for m in report.culprit.merges]
    # The outer PR's merge is where it entered main, the inner one where it entered the
    # PR's branch (the posterior walks through it; git bisect's DAG walk lands past it).
    assert merges == [c["M"], c["N"]]
    assert report.culprit.merge is not None and report.culprit.merge.commit == c["M"]
    assert report.culprit.pr == 8  # the innermost PR that brought it in


def two_inner_prs(repo: Path) -> dict[str, str]:
    """main: m0 m1 [M: merge of PR #7] m3;  PR #7: a1 [N8: merge of PR #8] a3 [N9: merge
    of PR #9] a5;  PR #8: b1 (good);  PR #9: d1 d2 (d2 is the culprit). PR #8 was merged
    into PR #7's branch before PR #9: the first inner merge is not the culprit's."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "T")
    c: dict[str, str] = {}
    c["m0"] = _commit(repo, GOOD, "m0")
    c["m1"] = _commit(repo, GOOD, "m1")
    _git(repo, "checkout", "-q", "-b", "pr-7")
    c["a1"] = _commit(repo, GOOD, "PR 7: a1")
    _git(repo, "checkout", "-q", "-b", "pr-8")
    c["b1"] = _commit(repo, GOOD, "PR 8: b1")
    _git(repo, "checkout", "-q", "pr-7")
    c["N8"] = _merge(repo, "pr-8", GOOD, "Merge pull request #8 from dev/pr-8")
    c["a3"] = _commit(repo, GOOD, "PR 7: a3")
    _git(repo, "checkout", "-q", "-b", "pr-9")
    c["d1"] = _commit(repo, GOOD, "PR 9: d1")
    c["d2"] = _commit(repo, BAD, "PR 9: d2 drops the trigger index")
    _git(repo, "checkout", "-q", "pr-7")
    c["N9"] = _merge(repo, "pr-9", BAD, "Merge pull request #9 from dev/pr-9")
    c["a5"] = _commit(repo, BAD, "PR 7: a5")
    _git(repo, "checkout", "-q", "main")
    c["M"] = _merge(repo, "pr-7", BAD, "Merge pull request #7 from dev/pr-7")
    c["m3"] = _commit(repo, BAD, "m3")
    return c


def test_the_merge_path_names_the_inner_pr_that_brought_the_culprit_in(tmp_path: Path) -> None:
    c = two_inner_prs(tmp_path / "repo")
    repo = GitRepo(tmp_path / "repo")
    assert merge_path(repo, c["M"], c["d2"]) == [c["M"], c["N9"]]
    assert merge_path(repo, c["M"], c["a3"]) == [c["M"]]  # on PR #7's own line
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=c["m0"],
        bad=c["m3"],
        repo=tmp_path / "repo",
        threshold=10.0,
        first_parent=True,
    )
    report = run_bisection(
        settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO())
    )
    assert report.culprit is not None and report.culprit.commit == c["d2"]
    assert [m.commit for m in report.culprit.merges] == [c["M"], c["N9"]]
    assert report.culprit.pr == 9
