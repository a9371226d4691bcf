"""The builds worth prefetching: one of them is git bisect's next pick, whatever the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.gitrepo import BisectSession, GitRepo
from bisector.search.ahead import next_candidates, split_points
from tests.helpers.repo import build_repo


@pytest.mark.parametrize("verdict", ["good", "bad"])
def test_git_bisects_next_pick_is_prefetched(tmp_path: Path, verdict: str) -> None:
    built = build_repo(tmp_path / "repo", [0] * 23)
    commits = built.mainline
    session = BisectSession(GitRepo(built.path), tmp_path / "bisect")
    try:
        session.start(commits[0], commits[-1])
        for _ in range(2):  # two rounds deep
            remaining = session.remaining()
            pick = session.next_commit()
            assert pick is not None
            ahead = next_candidates(list(reversed(remaining[1:])), [pick], 1)
            assert len(ahead) == 2
            session.mark(pick, verdict)
            assert session.next_commit() in ahead
    finally:
        session.close()


def test_k_slots_prefetch_each_parts_split_points_first_of_all() -> None:
    open_ = [f"c{i:02d}" for i in range(1, 12)]
    ahead = next_candidates(open_, ["c04", "c08"], 2)
    # Three parts (c01-c03, c05-c07, c09-c11), each split as SplitStrategy would (2 picks
    # of 3 commits: the 2nd and 3rd): the first split point of every part comes first.
    assert split_points(open_[0:3], 2) == ["c02", "c03"]
    assert ahead[:3] == ["c02", "c06", "c10"]
    assert set(ahead) == {"c02", "c03", "c06", "c07", "c10", "c11"}
    assert next_candidates(open_, [], 1) == []
