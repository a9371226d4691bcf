"""GitRepo.revert_onto: a culprit reverted on a later commit, as the tool's own commit.

Real git in temporary repositories (git 2.39: `git apply --cached --3way` records a
conflict as unmerged index entries, `git ls-files --unmerged` lists them).
"""

from __future__ import annotations

from pathlib import Path

from bisector.gitrepo import REVERTS_REF, GitRepo
from tests.helpers.repo import PR, build_repo, run_git


def test_a_commit_reverted_on_a_later_one_is_the_same_commit_every_time(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [2, 2, 40, 40, 40], revertable=True)
    culprit, bad = built.mainline[2], built.mainline[-1]
    repo = GitRepo(built.path)
    status_before = run_git(built.path, "status", "--porcelain")
    head_before = run_git(built.path, "rev-parse", "HEAD")

    reverted = repo.revert_onto(bad, [culprit])

    assert reverted.applied and reverted.commit is not None
    assert run_git(built.path, "show", f"{reverted.commit}:value") == "2"
    # Only the culprit's change is undone: the later commits' files are all there.
    assert run_git(built.path, "show", f"{reverted.commit}:serial/4") == "4"
    assert run_git(built.path, "rev-parse", f"{reverted.commit}^") == bad
    assert repo.tree_of(reverted.commit) == reverted.tree
    # Kept where git never collects it, and nothing of the user's moved.
    refs = run_git(built.path, "for-each-ref", "--format=%(refname)", REVERTS_REF)
    assert refs.split() == [f"{REVERTS_REF}/{reverted.commit}"]
    assert run_git(built.path, "status", "--porcelain") == status_before
    assert run_git(built.path, "rev-parse", "HEAD") == head_before
    # A resumed run (another process, another GitRepo) makes the very same commit.
    again = GitRepo(built.path).revert_onto(bad, [culprit])
    assert again.commit == reverted.commit


def test_a_revert_that_does_not_apply_names_the_culprit_and_the_files(tmp_path: Path) -> None:
    # build_repo's plain histories rewrite `serial` in every commit: a revert conflicts.
    built = build_repo(tmp_path / "repo", [2, 2, 40, 40])
    culprit, bad = built.mainline[2], built.mainline[-1]
    reverted = GitRepo(built.path).revert_onto(bad, [culprit])
    assert not reverted.applied and reverted.commit is None
    assert reverted.conflict_with == culprit
    assert reverted.conflict_files == ("serial",)
    assert run_git(built.path, "status", "--porcelain") == ""


def test_a_merge_is_reverted_against_its_first_parent(tmp_path: Path) -> None:
    # Mainline index 3 merges PR #9, whose two commits bring value 40 in.
    built = build_repo(
        tmp_path / "repo", [2, 2, 2, 40, 40, 40], prs=[PR(3, [2, 40], 9)], revertable=True
    )
    merge, bad = built.mainline[3], built.mainline[-1]
    reverted = GitRepo(built.path).revert_onto(bad, [merge])
    assert reverted.commit is not None
    assert run_git(built.path, "show", f"{reverted.commit}:value") == "2"
    files = run_git(built.path, "ls-tree", "-r", "--name-only", reverted.commit).split()
    # What the PR's branch brought in is gone with it; the rest of mainline stays.
    assert "serial/3.0" not in files and "serial/3.1" not in files
    assert {"serial/4", "serial/5"} <= set(files)


def test_two_culprits_are_reverted_newest_first(tmp_path: Path) -> None:
    # value2 regresses at 2, value at 4: each in its own file, each reverts alone.
    built = build_repo(tmp_path / "repo", [0, 0, 0, 0, 30, 30], second=[0, 0, 200, 200, 200, 200])
    older, newer, bad = built.mainline[2], built.mainline[4], built.mainline[-1]
    repo = GitRepo(built.path)
    both = repo.revert_onto(bad, [older, newer])
    assert both.culprits == (newer, older)
    assert both.commit is not None
    assert run_git(built.path, "show", f"{both.commit}:value") == "0"
    assert run_git(built.path, "show", f"{both.commit}:value2") == "0"
    only_older = repo.revert_onto(bad, [older])
    assert only_older.commit is not None and only_older.commit != both.commit
    assert run_git(built.path, "show", f"{only_older.commit}:value") == "30"
