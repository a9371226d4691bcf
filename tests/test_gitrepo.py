from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bisector.errors import BisectorError, InfraError
from bisector.gitrepo import BisectSession, CheckoutError, GitFailure, GitRepo, RepoGiven
from bisector.search.strategy import SearchState, SplitStrategy
from tests.helpers.checkout import snapshot
from tests.helpers.repo import PR, build_repo


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def test_resolve_and_range_checks(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 2, 3])
    repo = GitRepo(tmp_path / "r")
    assert repo.resolve("HEAD") == built.mainline[-1]
    assert repo.resolve(built.mainline[0][:8]) == built.mainline[0]
    with pytest.raises(BisectorError, match="unknown revision 'nope'"):
        repo.resolve("nope")
    with pytest.raises(BisectorError, match="same commit"):
        repo.check_range(built.mainline[1], built.mainline[1])
    with pytest.raises(BisectorError, match="are --good and --bad swapped"):  # issue 29
        repo.check_range(built.mainline[2], built.mainline[0])
    repo.check_range(built.mainline[0], built.mainline[2])


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(BisectorError, match="not a git repository"):
        GitRepo(tmp_path)


def test_the_fix_named_is_the_one_for_how_the_path_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --repo /no/such/dir` said "pass --repo" though it was passed; a nightly job's
    `repo` key said "pass --repo", which changes nothing there."""
    missing = tmp_path / "no" / "such"
    with pytest.raises(BisectorError) as flag:
        GitRepo(missing, given=RepoGiven.flag(missing))
    assert str(flag.value) == (
        f"--repo {missing} does not exist; pass --repo the path of a checkout of the repository"
    )
    where = "nightly.toml: key `nightly.jobs[0].repo`"
    with pytest.raises(BisectorError) as key:
        GitRepo(missing, given=RepoGiven.key(where, missing))
    assert str(key.value).startswith(f"{where} = '{missing}' does not exist; set that key")
    assert "--repo does not change a config's repo" in str(key.value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BisectorError) as here:
        GitRepo(Path(), given=RepoGiven.flag(None))
    assert str(here.value).startswith(f"the current directory {tmp_path} is not a git repository")
    assert str(here.value).endswith("or pass --repo DIR")
    (tmp_path / "file").write_text("")
    with pytest.raises(BisectorError, match="is not a directory"):
        GitRepo(tmp_path / "file", given=RepoGiven.flag(tmp_path / "file"))


def test_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    build_repo(tmp_path / "r", [1, 2])
    first, second = GitRepo(tmp_path / "r"), GitRepo(tmp_path / "r")
    with first.lock(), pytest.raises(BisectorError, match="already running"), second.lock():
        pass
    with second.lock():  # released once the first holder is done
        pass


def test_session_finds_first_bad_without_touching_the_user_bisect(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", list(range(10)))
    path = tmp_path / "r"
    _git(path, "bisect", "start", built.mainline[-1], built.mainline[0])
    before = snapshot(path)
    repo = GitRepo(path)
    session = BisectSession(repo, tmp_path / "session")
    session.start(built.mainline[0], built.mainline[-1])
    while (commit := session.next_commit()) is not None:
        session.mark(commit, "bad" if built.value(commit) >= 6 else "good")
    assert session.first_bad == built.mainline[6]
    assert "git bisect good" in session.log()
    session.close()
    assert not (tmp_path / "session").exists()
    assert snapshot(path) == before
    assert "git bisect start" in _git(path, "bisect", "log")


def test_first_parent_stops_at_the_merge_and_skip_is_accepted(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 1, 1, 9, 9], prs=[PR(at=3, values=[1, 9], number=7)])
    repo = GitRepo(tmp_path / "r")
    session = BisectSession(repo, tmp_path / "s")
    session.start(built.mainline[0], built.mainline[-1], first_parent=True)
    seen = []
    while (commit := session.next_commit()) is not None:
        seen.append(commit)
        verdict = "skip" if commit == built.mainline[1] else None
        session.mark(commit, verdict or ("bad" if built.value(commit) >= 5 else "good"))
    assert session.first_bad == built.mainline[3]
    assert not set(seen) & set(built.pr_commits[7])
    assert repo.info(built.mainline[3]).is_merge
    session.close()


@pytest.mark.parametrize(
    ("first_parent", "paths"), [(False, ()), (True, ()), (False, ("value",)), (True, ("value",))]
)
def test_remaining_is_what_git_bisect_visualize_lists(
    tmp_path: Path, first_parent: bool, paths: tuple[str, ...]
) -> None:
    """remaining() asks `git log --bisect` itself. The oracle, after every verdict: git's
    own `git bisect visualize --format=%H` in the session's worktree; with paths, the
    commits between the bisect refs that touch them, because git 2.39's visualize drops
    the paths (GIT_TRACE: `git log '--format=%H' --bisect --` for a session started with
    `-- value`) and lists commits git bisect itself never picks."""
    values = [1, 2, 3, 4, 9, 8, 7, 6]  # each mainline commit changes `value`
    prs = [PR(at=3, values=[3, 3, 1], number=7), PR(at=5, values=[9, 9], number=8)]
    built = build_repo(tmp_path / "r", values, prs=prs)
    session = BisectSession(GitRepo(tmp_path / "r"), tmp_path / "s")
    assert session.remaining() == []  # before a session: nothing, not the whole history
    session.start(built.mainline[0], built.mainline[-1], first_parent=first_parent, paths=paths)
    steps = 0
    while True:
        listed = _git(tmp_path / "s", "bisect", "visualize", "--format=%H").split()
        if paths:
            goods = _git(
                tmp_path / "s", "for-each-ref", "--format=%(objectname)", "refs/bisect/good-*"
            )
            bounds = ["refs/bisect/bad", "--not", *goods.split()]
            listed = _git(tmp_path / "s", "log", "--format=%H", *bounds, "--", *paths).split()
            assert sorted(session.remaining()) == sorted(listed) and listed  # --bisect's order
        else:
            assert session.remaining() == listed and listed
        if (commit := session.next_commit()) is None:
            break
        verdict = "skip" if steps == 1 else ("bad" if built.value(commit) >= 5 else "good")
        session.mark(commit, verdict)
        steps += 1
    assert steps >= 2 and session.done
    session.close()


def test_only_skipped_left(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 1, 9])
    session = BisectSession(GitRepo(tmp_path / "r"), tmp_path / "s")
    session.start(built.mainline[0], built.mainline[2])
    commit = session.next_commit()
    assert commit == built.mainline[1]
    session.mark(commit, "skip")
    assert session.done and session.first_bad is None
    assert set(session.remaining()) == {built.mainline[1], built.mainline[2]}
    session.close()


def test_worktree_reuse_cleans_and_survives_a_stale_lock(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 2])
    repo = GitRepo(tmp_path / "r")
    wt = tmp_path / "wt"
    repo.add_worktree(wt, built.mainline[0])
    (wt / "junk").write_text("x")
    gitdir = Path((wt / ".git").read_text().removeprefix("gitdir:").strip())
    (gitdir / "index.lock").write_text("")
    repo.add_worktree(wt, built.mainline[1])
    assert (wt / "value").read_text() == "2\n"
    assert not (wt / "junk").exists()
    repo.remove_worktree(wt)
    assert _git(tmp_path / "r", "worktree", "list").count("\n") == 1


def test_rev_list_pathspec_and_first_parent(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 2, 3, 4], prs=[PR(at=2, values=[5, 6])])
    repo = GitRepo(tmp_path / "r")
    good, bad = built.mainline[0], built.mainline[-1]
    assert repo.rev_list(good, bad, first_parent=True) == built.mainline[1:]
    assert len(repo.rev_list(good, bad)) == 5
    assert repo.rev_list(good, bad, paths=("BROKEN",)) == []


def _partial_clone_without_its_remote(tmp_path: Path) -> tuple[Path, list[str]]:
    """A real `--filter=blob:none` clone whose promisor remote has gone away."""
    built = build_repo(tmp_path / "src", [1, 2, 3, 4])
    src = tmp_path / "src"
    _git(src, "config", "uploadpack.allowFilter", "true")
    _git(src, "config", "uploadpack.allowAnySHA1InWant", "true")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", "--no-local", f"file://{src}", str(clone)],
        check=True,
        capture_output=True,
    )
    src.rename(tmp_path / "gone")  # offline, or the mirror was pruned
    return clone, built.mainline


def test_a_candidate_whose_blobs_a_partial_clone_cannot_fetch_is_a_skip(tmp_path: Path) -> None:
    clone, mainline = _partial_clone_without_its_remote(tmp_path)
    repo = GitRepo(clone)
    with pytest.raises(CheckoutError) as info:
        repo.add_worktree(tmp_path / "wt", mainline[0])
    assert isinstance(info.value, InfraError)
    reason = info.value.reason
    assert reason.startswith(f"cannot check out {mainline[0][:12]}: objects are missing")
    assert "\n" not in reason
    repo.add_worktree(tmp_path / "wt-head", mainline[-1])  # its blobs came with the clone
    assert (tmp_path / "wt-head" / "value").is_file()


def test_a_deleted_object_makes_that_candidate_a_skip(tmp_path: Path) -> None:
    path = tmp_path / "r"
    path.mkdir()
    _git(path, "init", "-q")
    for n in ("1", "2"):
        (path / "value").write_text(n)
        _git(path, "add", "value")
        _git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", n)
    first = _git(path, "rev-parse", "HEAD~1").strip()
    blob = _git(path, "rev-parse", "HEAD~1:value").strip()
    (path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    repo = GitRepo(path)
    with pytest.raises(CheckoutError, match="objects are missing"):
        repo.add_worktree(tmp_path / "wt", first)


def test_other_git_failures_are_one_line_bisector_errors(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "r", [1, 2, 3])
    repo = GitRepo(tmp_path / "r")
    for call in (
        lambda: repo.tree_of("f" * 40),
        lambda: repo.info("no-such-rev"),
        lambda: repo.rev_list("nope", built.mainline[-1]),
        lambda: repo.add_worktree(tmp_path / "wt", "no-such-rev"),
    ):
        with pytest.raises(BisectorError) as info:
            call()
        assert not isinstance(info.value, InfraError)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith("git ")
        assert "failed in" in message
        assert "Traceback" not in message


# What git printed for a `git worktree add` of kubernetes 17e85b25 into a full 2 MB tmpfs
# (the adversarial pass of 4 December 2026, git 2.39): one `unable to write file` per file
# (26,211), then the fatal line, never "no space". Kept as printed, cut to three files.
_FULL_DISK_STDERR = "\n".join(
    [
        "Preparing worktree (detached HEAD 17e85b25)",
        "error: unable to write file CHANGELOG/CHANGELOG-1.16.md",
        "error: unable to write file staging/src/k8s.io/apiserver/pkg/registry/generic/"
        "registry/corrupt_obj_deleter.go",
        "error: unable to write file hack/print-workspace-status.sh",
        "fatal: Could not reset index file to revision 'HEAD'.",
    ]
)


def test_a_checkout_that_cannot_write_its_files_says_so_not_missing_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run said "objects are missing from the repository (error: unable to write file
    # .../corrupt_obj_deleter.go)": the file's name matched "corrupt". (A real failing
    # write cannot be made here without a mount: subprocess restores SIGXFSZ in the git
    # child, so a file-size limit kills git instead of failing its write.)
    built = build_repo(tmp_path / "r", [1, 2])
    repo = GitRepo(tmp_path / "r")

    def full_disk(path: Path, commit: str, *, checkout: bool) -> None:
        raise GitFailure("git worktree add failed", stderr=_FULL_DISK_STDERR)

    monkeypatch.setattr(repo, "_add_worktree", full_disk)
    head = built.mainline[-1]
    with pytest.raises(BisectorError) as info:
        repo.add_worktree(tmp_path / "wt", head)
    message = str(info.value)
    assert not isinstance(info.value, InfraError), message
    assert "objects are missing" not in message and "\n" not in message, message
    assert message.startswith(
        f"cannot check out {head[:12]} into {tmp_path / 'wt'}: git could not write 3 of its "
        "files (error: unable to write file CHANGELOG/CHANGELOG-1.16.md); is that disk full ("
    ), message


def test_remaining_leads_with_the_bad_end_even_where_it_misses_the_paths(
    tmp_path: Path,
) -> None:
    """`git log --bisect -- paths` leaves out the bad end when it does not touch the
    paths, and SplitStrategy drops remaining()[0] as the current bad: the newest commit
    touching the paths was dropped in its place, never one of the split's picks."""
    built = build_repo(tmp_path / "r", [1, 1, 1, 1, 1, 1, 9, 9], broken=[2, 5])
    bad = built.mainline[-1]  # BROKEN is added by 2 and 5, removed by 3 and 6: not by 7
    session = BisectSession(GitRepo(tmp_path / "r"), tmp_path / "s")
    session.start(built.mainline[0], bad, paths=("BROKEN",))
    touching = [built.mainline[k] for k in (6, 5, 3, 2)]
    assert session.remaining() == [bad, *touching]
    state = SearchState(session, built.mainline[0], bad, 5.0)
    assert sorted(SplitStrategy().choose(state, 4)) == sorted(touching)  # m6 among them
    session.close()
