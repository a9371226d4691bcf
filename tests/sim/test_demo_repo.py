from __future__ import annotations

import contextlib
import re
import tomllib
from pathlib import Path

import git
import pytest

from bisector.errors import BisectorError
from bisector.sim import ProfileError, SimProfile, load_profile
from bisector.sim.demo_repo import PROFILE_PATH, DemoRepo, create_demo_repo, demo_config

MERGE = re.compile(r"^Merge pull request #(\d+) from [\w-]+/[\w.-]+$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRepo:
    return create_demo_repo(
        tmp_path_factory.mktemp("demo") / "kubernetes", nodes=3000, seed=5, prs=16
    )


def profile_at(demo: DemoRepo, commit: str, tmp_path: Path) -> SimProfile:
    """The profile as the sim backend would read it from a checkout of `commit`."""
    repo = git.Repo(demo.path)
    target = tmp_path / commit / "profile.toml"
    target.parent.mkdir(parents=True)
    with contextlib.suppress(git.GitCommandError):  # missing in that tree
        target.write_text(repo.git.show(f"{commit}:{PROFILE_PATH}"))
    return load_profile(target)


def test_first_parent_line_is_pr_merges_of_one_to_three_commits(demo: DemoRepo) -> None:
    repo = git.Repo(demo.path)
    line = list(repo.iter_commits(f"{demo.good}..{demo.bad}", first_parent=True))
    assert len(line) == demo.merges == 15
    for merge in line:
        assert MERGE.match(str(merge.summary)), merge.summary
        base, tip = merge.parents
        own = list(repo.iter_commits(f"{base.hexsha}..{tip.hexsha}"))
        assert 1 <= len(own) <= 3
    assert repo.head.commit.hexsha == demo.bad and not repo.is_dirty()


def test_planted_culprit_is_the_second_commit_of_its_pr(demo: DemoRepo, tmp_path: Path) -> None:
    repo = git.Repo(demo.path)
    culprit, merge = repo.commit(demo.culprit), repo.commit(demo.culprit_merge)
    assert culprit.summary == demo.culprit_subject
    assert str(merge.summary).startswith(f"Merge pull request #{demo.culprit_pr} ")
    assert merge.parents[1] == culprit and culprit.parents[0].hexsha == demo.culprit_pr_first
    assert culprit.parents[0].parents[0] == merge.parents[0]
    assert repo.is_ancestor(repo.commit(demo.good), merge)
    assert profile_at(demo, demo.culprit, tmp_path).trigger_index is False
    assert profile_at(demo, demo.culprit_pr_first, tmp_path).trigger_index is True
    assert profile_at(demo, demo.good, tmp_path).trigger_index is True
    assert profile_at(demo, demo.bad, tmp_path).trigger_index is False


def test_unbuildable_commits_are_exactly_those_with_a_bad_profile(
    demo: DemoRepo, tmp_path: Path
) -> None:
    repo = git.Repo(demo.path)
    broken = set()
    for commit in repo.iter_commits(demo.bad):
        try:
            profile_at(demo, commit.hexsha, tmp_path)
        except ProfileError:
            broken.add(commit.hexsha)
    assert broken == set(demo.unbuildable)
    mainline = {c.hexsha for c in repo.iter_commits(demo.bad, first_parent=True)}
    assert broken & mainline  # the first-parent bisection meets a skip too
    assert broken - mainline  # and so does the descent into PRs
    assert demo.culprit_merge not in broken and demo.culprit not in broken


def test_same_seed_same_hashes(demo: DemoRepo, tmp_path: Path) -> None:
    again = create_demo_repo(tmp_path / "again", nodes=3000, seed=5, prs=16)
    assert (again.good, again.bad, again.culprit) == (demo.good, demo.bad, demo.culprit)
    other = create_demo_repo(tmp_path / "other", nodes=3000, seed=6, prs=16)
    assert other.bad != demo.bad


def test_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BisectorError, match="not empty"):
        create_demo_repo(tmp_path, nodes=10, seed=0)


def test_demo_config_uses_the_sim_backend(demo: DemoRepo) -> None:
    config = tomllib.loads(demo_config(demo))
    assert config["run"]["backend"] == "sim" and config["run"]["metric"] == "conflicts"
    assert config["backends"]["sim"] == {"profile": PROFILE_PATH, "nodes": 3000, "seed": 5}


def test_the_shortest_history_allowed_builds_for_any_seed(tmp_path: Path) -> None:
    # 12 PRs with seed 4: no stretch of mainline was more than 4 merges from the culprit's,
    # and choosing where the unbuildable one goes raised IndexError.
    demo = create_demo_repo(tmp_path / "short", nodes=3000, seed=4, prs=12)
    assert demo.culprit and demo.unbuildable
