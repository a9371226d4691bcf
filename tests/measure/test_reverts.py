"""Candidates with the culprits found so far reverted (bisector.measure.reverts)."""

from __future__ import annotations

from pathlib import Path

from bisector.gitrepo import GitRepo
from bisector.measure.measurement import Measurement
from bisector.measure.reverts import Reverts
from tests.helpers.repo import build_repo, run_git


def test_only_candidates_that_contain_a_culprit_are_built_with_it_reverted(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", [2, 2, 40, 40, 40], revertable=True)
    repo = GitRepo(built.path)
    reverts = Reverts(repo)
    culprit = built.mainline[2]
    before, later = built.mainline[1], built.mainline[3]
    assert reverts.of(later).build == later  # nothing reverted until culprits are set
    reverts.set([culprit])
    plain = reverts.of(before)
    assert (plain.build, plain.tree, plain.reverted) == (before, repo.tree_of(before), ())
    sub = reverts.of(later)
    assert sub.build != later and sub.reverted == (culprit,) and not sub.conflict
    assert sub.tree == repo.tree_of(sub.build) != repo.tree_of(later)
    assert run_git(built.path, "show", f"{sub.build}:value") == "2"
    # The culprit itself contains itself: measured as its parent's code.
    assert run_git(built.path, "show", f"{reverts.of(culprit).build}:value") == "2"
    # Another process (a resumed run) gets the same commit and tree: the journal's key.
    again = Reverts(GitRepo(built.path))
    again.set([culprit])
    assert again.of(later) == sub


def test_a_candidate_whose_revert_conflicts_is_a_final_skip_with_a_key_of_its_own(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", [2, 2, 40, 40])  # `serial` conflicts
    reverts = Reverts(GitRepo(built.path))
    reverts.set([built.mainline[2]])
    sub = reverts.of(built.mainline[3])
    assert sub.conflict.startswith(f"reverting {built.mainline[2][:12]} on ")
    assert "conflict: serial" in sub.conflict and sub.conflict_files == ("serial",)
    assert sub.tree.startswith("unrevertable:") and sub.build == built.mainline[3]
    assert Reverts(GitRepo(built.path)).of(built.mainline[3], [built.mainline[2]]).tree == sub.tree
    skip = Measurement(sub.commit, sub.tree, "bisect", reason="revert: x", skipped_at="revert")
    assert not skip.infra_skip  # the tree's: never measured again
