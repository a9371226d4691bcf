"""A confirmed culprit rests on full-length measurements only (issue 20, class 1).

"C is the culprit" claims: C is bad and each of its parents good; when the search came
down through merges, each merge descended into is bad and its first parent good. Early
good verdicts (a shortened run) and marks by hand (no run at all) may have decided any
of those: the confirmation measures every such commit again at full length. A
contradicted early good verdict withdraws them all and the search runs again; a
contradicted mark leaves the culprit not confirmed, and the report says why.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bisector.bisection.confirm import Claim, claims
from bisector.exitcodes import RunExit
from bisector.gitrepo import GitRepo
from bisector.measure.journal import EarlyGoodWithdrawn, Measured, read_journal
from tests.helpers.fake_backends import LATE, ShapedFileValue
from tests.helpers.faults import (
    FaultDriver,
    measurements,
    report,
    run_args,
    write_fault_config,
)
from tests.helpers.inprocess import bisect_built
from tests.helpers.repo import PR, BuiltRepo, build_repo, commit_value, run_git

GOOD, BAD = 20, 400  # ShapedFileValue: BAD passes the threshold (100) after 3 minutes
FORK, MERGE = 3, 4


def _slow_branch_fast_merge(path: Path) -> tuple[BuiltRepo, list[str]]:
    """Mainline 0-3 good; 4 the merge of a PR forked from 3 whose second and third commits
    carry a regression showing only after 8 of 10 minutes (LATE), the merge itself one
    from the start (a conflict resolved badly); then bad to the end."""
    built = build_repo(path, [GOOD] * MERGE)
    repo = built.path
    run_git(repo, "checkout", "-q", "-b", "pr-5", built.mainline[FORK])
    pr = [
        commit_value(repo, GOOD, "pr.1", f"PR 5 part 1: value {GOOD}"),
        commit_value(repo, LATE, "pr.2", f"PR 5 part 2: value {LATE}"),
        commit_value(repo, LATE, "pr.3", f"PR 5 part 3: value {LATE}"),
    ]
    run_git(repo, "checkout", "-q", "main")
    run_git(repo, "merge", "-q", "--no-ff", "-s", "ours", "-m", "Merge pull request #5", "pr-5")
    (repo / "value").write_text(f"{BAD}\n")
    (repo / "serial").write_text("merge\n")
    run_git(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    built.mainline.append(run_git(repo, "rev-parse", "HEAD"))
    for k in range(MERGE + 1, MERGE + 6):
        built.mainline.append(commit_value(repo, BAD, str(k), f"Commit {k}: value {BAD}"))
    return built, pr


@pytest.mark.slow
def test_a_merge_named_on_early_good_verdicts_of_its_branch_is_not_confirmed(
    tmp_path: Path,
) -> None:
    # Early good verdicts pass the PR's slow regression (parts 2 and 3) as good, so the
    # search names the merge: "a bad merge of good parents". Its first parent is good at
    # full length, but the branch tip is not: measured again, it is bad, the early good
    # verdicts are withdrawn and the search finds the PR's second commit.
    built, pr = _slow_branch_fast_merge(tmp_path / "repo")
    report_, out = bisect_built(
        tmp_path,
        built,
        ShapedFileValue(),
        threshold=100.0,
        warmup="10m",
        check_every="1m",
        early_good=True,
        first_parent=True,
    )
    records = read_journal(Path(report_.run_dir) / "journal.jsonl")
    measured = [r.measurement for r in records if isinstance(r, Measured)]
    tip = [m for m in measured if m.commit == pr[2]]
    assert any(m.early_verdict == "good" for m in tip)  # the scenario: the tip passed early
    assert any(m.phase == "confirm" and m.stopped_early is None for m in tip)
    # Each confirmation run says what it is to the claim (the report's "why there").
    assert any(m.why.endswith("the culprit's merged branch's tip") for m in tip), [
        m.why for m in tip
    ]
    assert "searching again without early good verdicts" in out
    assert any(isinstance(r, EarlyGoodWithdrawn) for r in records)
    assert report_.culprit is not None
    assert report_.culprit.commit == pr[1]
    assert report_.confirmed


def test_the_claim_of_a_culprit_names_its_parents_and_each_merge_descended_into(
    tmp_path: Path,
) -> None:
    built, pr = _slow_branch_fast_merge(tmp_path / "repo")
    repo = GitRepo(built.path)
    merge, before = built.mainline[MERGE], built.mainline[FORK]
    inside = claims(repo, pr[1], [merge])
    assert [(c.commit, c.expected) for c in inside] == [
        (pr[1], "bad"),
        (pr[0], "good"),
        (merge, "bad"),
        (before, "good"),
    ]
    the_merge = claims(repo, merge, [merge])
    assert the_merge == [
        Claim(merge, "bad", "the culprit"),
        Claim(before, "good", "the culprit's parent"),
        Claim(pr[2], "good", "the culprit's merged branch's tip"),
    ]


# -- marks by hand, through the CLI ----------------------------------------------------


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[FaultDriver]:
    """The fault suite's local backend (tests/helpers/faults.py), nothing injected."""
    made = write_fault_config(tmp_path / "cluster")
    yield made
    made.kill_leftovers()


def _marked_run(
    tmp_path: Path, driver: FaultDriver, built: BuiltRepo, commit: str, verdict: str
) -> subprocess.CompletedProcess[str]:
    """`bisector mark COMMIT VERDICT` in a run directory, then `bisector run --first-parent`."""
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    argv += ["--first-parent", "--threshold", "10"]
    run_dir.mkdir()
    good, bad = built.mainline[0], built.mainline[-1]
    (run_dir / "journal.jsonl").write_text(
        f'{{"type": "start", "good": "{good}", "bad": "{bad}", "command": ""}}\n'
    )
    mark = [*argv[:3], "mark", commit, verdict, "--repo", str(built.path), "--run-dir"]
    marked = subprocess.run([*mark, str(run_dir)], capture_output=True, text=True, check=False)
    assert marked.returncode == 0, marked.stderr
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_a_branch_tip_marked_good_by_hand_is_measured_before_the_merge_is_confirmed(
    tmp_path: Path, driver: FaultDriver
) -> None:
    # PR 7 is one commit, bad; a person marks it good (by mistake). The search then
    # names the merge, a bad merge of good parents, and its first parent is good at full
    # length: only measuring the marked tip shows the claim does not hold.
    built = build_repo(
        tmp_path / "repo", [2, 2, 2, 2, 40, 40, 40, 40], prs=[PR(at=4, values=[40], number=7)]
    )
    (tip,) = built.pr_commits[7]
    result = _marked_run(tmp_path, driver, built, tip, "good")
    assert "Traceback" not in result.stderr
    run_dir = tmp_path / "run"
    tip_runs = [m for m in measurements(run_dir) if m["commit"] == tip]
    assert tip_runs and all(m["phase"] == "confirm" for m in tip_runs)
    assert result.returncode == RunExit.INCONCLUSIVE, result.stdout + result.stderr
    culprit = report(run_dir)["culprit"]
    assert culprit is not None and culprit["confirmed"] is False
    assert "confirmed by measuring both again: NO" in result.stdout
    said = f"merged branch's tip {tip[:12]} was marked good by hand; measured bad"
    assert said in result.stdout


@pytest.mark.slow
def test_a_merges_first_parent_marked_good_by_hand_is_measured_before_a_culprit_inside(
    tmp_path: Path, driver: FaultDriver
) -> None:
    # Mainline 2 is the regression; a person marks mainline 4 good (by mistake). The
    # first-parent search then finds the merge at 5 "first bad", and inside its branch
    # (forked before the regression) a commit of its own that is bad against a good
    # parent: a real regression, but not the one good..bad is about.
    built = build_repo(
        tmp_path / "repo",
        [2, 2, 40, 40, 40, 40, 40, 40, 40],
        prs=[PR(at=5, values=[2, 40], number=9)],
    )
    marked = built.mainline[4]
    result = _marked_run(tmp_path, driver, built, marked, "good")
    assert "Traceback" not in result.stderr
    culprit = report(tmp_path / "run")["culprit"]
    if culprit is not None and culprit["commit"] == built.mainline[2]:
        raise AssertionError("the search never used the mark: the test tests nothing")
    assert result.returncode == RunExit.INCONCLUSIVE, result.stdout + result.stderr
    assert culprit is not None and culprit["confirmed"] is False
    said = "was marked good by hand; measured bad at full length"
    assert said in result.stdout and marked[:12] in result.stdout
