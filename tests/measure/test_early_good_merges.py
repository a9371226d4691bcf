"""Early good verdicts and merges: a wrong early good on the first-parent line must not
hide behind a merged branch.

The pipeline's safety net measures the culprit's parent at full length: when early good
verdicts moved the culprit later, that parent is bad. But when the culprit the search
lands on is a merge whose branch forked before the regression the early verdicts
missed, the search descends into the branch, and the culprit's parent is a branch
commit: good at full length (the branch never had that regression). The merge's own
first parent, the commit the first-parent search called good, is the one to check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.measure.journal import EarlyGoodWithdrawn, Measured, read_journal
from bisector.report.model import Report
from tests.helpers.fake_backends import LATE, ShapedFileValue
from tests.helpers.inprocess import bisect_built
from tests.helpers.repo import BuiltRepo, build_repo
from tests.helpers.repo import commit_value as _commit
from tests.helpers.repo import run_git as _git

GOOD, BAD = 20, 400  # see ShapedFileValue: BAD passes the threshold (100) after 3 minutes
FORK, FIRST_LATE, MERGE = 3, 5, 9


def _history(path: Path, mainline: list[int] | None = None) -> tuple[BuiltRepo, list[str]]:
    """Mainline 0-4 good, 5-8 a regression showing only after 8 of 10 minutes (the
    first bad on the first-parent line), 9 the merge of a PR forked from mainline 3
    (so without that regression) whose second commit regresses from the start, then
    bad to the end (`mainline`: other values for mainline 0-8). Returns the repo
    (mainline filled in) and the PR's two commits."""
    values = mainline or [GOOD] * FIRST_LATE + [LATE] * (MERGE - FIRST_LATE)
    built = build_repo(path, values)
    repo = built.path
    _git(repo, "checkout", "-q", "-b", "pr-77", built.mainline[FORK])
    pr = [
        _commit(repo, GOOD, "pr.1", f"PR 77 part 1: value {GOOD}"),
        _commit(repo, BAD, "pr.2", f"PR 77 part 2: value {BAD}"),
    ]
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-s", "ours", "-m", "Merge pull request #77", "pr-77")
    (repo / "value").write_text(f"{BAD}\n")
    (repo / "serial").write_text("merge\n")
    _git(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    built.mainline.append(_git(repo, "rev-parse", "HEAD"))
    for k in range(MERGE + 1, MERGE + 7):
        built.mainline.append(_commit(repo, BAD, str(k), f"Commit {k}: value {BAD}"))
    return built, pr


def _run(tmp_path: Path, *, early_good: bool) -> tuple[Report, BuiltRepo, list[str], str]:
    built, pr = _history(tmp_path / "repo")
    report, out = bisect_built(
        tmp_path,
        built,
        ShapedFileValue(),
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=early_good,
        first_parent=True,
    )
    return report, built, pr, out


@pytest.mark.slow
def test_full_length_runs_name_the_first_bad_merge_of_the_first_parent_line(
    tmp_path: Path,
) -> None:
    report, built, _pr, _ = _run(tmp_path, early_good=False)
    assert report.culprit is not None and report.culprit.commit == built.mainline[FIRST_LATE]
    assert report.confirmed


@pytest.mark.slow
def test_a_wrong_early_good_before_a_merged_branch_is_caught_and_searched_again(
    tmp_path: Path,
) -> None:
    report, built, pr, out = _run(tmp_path, early_good=True)
    records = read_journal(Path(report.run_dir) / "journal.jsonl")
    measured = [r.measurement for r in records if isinstance(r, Measured)]
    # The scenario: the late regression's commits were passed early as good ...
    assert any(
        m.early_verdict == "good" and m.commit in built.mainline[FIRST_LATE:MERGE] for m in measured
    )
    # ... which must not end in the PR's commit, "confirmed" against its good parent.
    assert report.culprit is not None
    assert report.culprit.commit != pr[1] or not report.confirmed
    assert report.culprit.commit == built.mainline[FIRST_LATE] and report.confirmed
    assert any(isinstance(r, EarlyGoodWithdrawn) for r in records)
    assert "searching again without early good verdicts" in out
    merge_parent = built.mainline[MERGE - 1]
    checked = [m for m in measured if m.commit == merge_parent and m.phase == "confirm"]
    assert checked and all(m.stopped_early is None for m in checked)


@pytest.mark.slow
def test_a_merge_whose_first_parent_was_good_at_full_length_costs_no_extra_run(
    tmp_path: Path,
) -> None:
    # One regression, in the PR. Mainline 8 (the merge's first parent) grows on course
    # for 60 (over half the threshold): never good early, judged at full length.
    built, pr = _history(tmp_path / "repo", [GOOD] * (MERGE - 1) + [60])
    report, _out = bisect_built(
        tmp_path,
        built,
        ShapedFileValue(),
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=True,
        first_parent=True,
    )
    assert report.culprit is not None and report.culprit.commit == pr[1] and report.confirmed
    records = read_journal(Path(report.run_dir) / "journal.jsonl")
    measured = [r.measurement for r in records if isinstance(r, Measured)]
    assert any(m.early_verdict == "good" for m in measured)  # early goods were used
    before = built.mainline[MERGE - 1]
    runs = [m for m in measured if m.commit == before]
    assert runs and all(m.phase == "bisect" and m.early_verdict is None for m in runs)
    assert not any(isinstance(r, EarlyGoodWithdrawn) for r in records)
