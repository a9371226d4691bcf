"""scripts/procs_months.py: one first-parent commit a month, built and launched with one
config, over the procs backend's fake Kubernetes programs (tests/helpers/fake_kube.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.procs_backend import ProcsWorld, fake_env, make_world
from tests.helpers.scripts import load_script


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcsWorld]:
    made = make_world(tmp_path)
    with fake_env(monkeypatch, made):
        yield made


def _git(repo: Path, *args: str, date: str = "") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo, check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()  # fmt: skip


def _commit(repo: Path, date: str, value: int, *, broken: bool = False) -> str:
    (repo / "value").write_text(f"{value}\n")
    (repo / "date").write_text(date)  # no two commits share a tree
    if broken:
        (repo / "BROKEN").write_text("")
    elif (repo / "BROKEN").exists():
        (repo / "BROKEN").unlink()
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"at {date}", date=date)
    return _git(repo, "rev-parse", "HEAD")


def _history(path: Path, *, broken_august: bool = False) -> dict[str, str]:
    """June (two commits), a July merge of a branch begun in June, August."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    made = {"june": _commit(path, "2017-06-01T09:00:00+00:00", 0)}
    _commit(path, "2017-06-20T09:00:00+00:00", 0)
    _git(path, "checkout", "-qb", "pr")
    (path / "pr.txt").write_text("a branch's own file\n")  # merges without a conflict
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "pr", date="2017-06-25T09:00:00+00:00")
    made["pr"] = _git(path, "rev-parse", "HEAD")  # off the first-parent line
    _git(path, "checkout", "-q", "main")
    _commit(path, "2017-06-28T09:00:00+00:00", 0)
    date = "2017-07-02T09:00:00+00:00"
    _git(path, "merge", "--no-ff", "-qm", "Merge pull request #1", "pr", date=date)
    made["july"] = _git(path, "rev-parse", "HEAD")
    made["august"] = _commit(path, "2017-08-03T23:30:00-07:00", 9, broken=broken_august)
    return made


def _config(world: ProcsWorld, harness: str) -> Path:
    path = world.root / "procs.toml"
    procs = world.data(harness_commit=harness)
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"', "launch_attempts = 2"]
    lines += ["[backends.procs]", *(f"{k} = {json.dumps(v)}" for k, v in procs.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _argv(world: ProcsWorld, made: dict[str, str], since: str, until: str) -> list[str]:
    """The script's arguments over `_history`, June's commit as the harness."""
    return [
        "--repo", str(world.root / "history"), "--config", str(_config(world, made["june"])),
        "--since", since, "--until", until, "--run-dir", str(world.run_dir), "--warmup", "2s",
    ]  # fmt: skip


def test_each_month_is_its_first_first_parent_commit_by_utc_commit_date(tmp_path: Path) -> None:
    from bisector.gitrepo import GitRepo

    made = _history(tmp_path / "repo")
    months = load_script("procs_months")
    assert months.months("2017-11", "2018-02") == ["2017-11", "2017-12", "2018-01", "2018-02"]
    rows = months.first_of_months(
        GitRepo(tmp_path / "repo"), "HEAD", months.months("2017-06", "2017-09")
    )
    assert [(r.month, r.commit) for r in rows] == [
        ("2017-06", made["june"]),
        ("2017-07", made["july"]),  # the merge, not the branch's June commit
        ("2017-08", made["august"]),  # 23:30 at -07:00 is 4 August UTC, still August
    ]


@pytest.mark.slow
def test_every_month_builds_and_launches_and_no_worktree_is_left(
    world: ProcsWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    made = _history(world.root / "history")
    argv = _argv(world, made, "2017-06", "2017-08")
    assert load_script("procs_months").main(argv) == 0
    out = capsys.readouterr().out
    assert "every month built and launched" in out
    table = out[out.index("month    commit") :].splitlines()
    assert [line.split()[0] for line in table[1:4]] == ["2017-06", "2017-07", "2017-08"]
    assert all(line.split()[4:6] == ["yes", "yes"] for line in table[1:4])
    assert table[3].split()[-1] == "9"  # August's apiserver logs nine 409s
    # Said as it goes: a cold build takes minutes.
    assert "2017-06 " + made["june"][:12] + ": building" in out
    worktrees = _git(world.root / "history", "worktree", "list").splitlines()
    assert len(worktrees) == 1 and world.leftovers() == []


def test_a_month_that_does_not_build_is_said_with_its_reason_and_fails_the_proof(
    world: ProcsWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    made = _history(world.root / "history", broken_august=True)
    argv = _argv(world, made, "2017-08", "2017-08")
    assert load_script("procs_months").main(argv) == 1
    out = capsys.readouterr().out
    assert "NOT every month built and launched" in out
    assert "2017-08 " + made["august"][:12] + ": build failed: go build ./cmd/kube-apiserver" in out
    assert "syntax error: fake compile error" in out
    assert len(_git(world.root / "history", "worktree", "list").splitlines()) == 1


def test_an_interrupted_run_prints_the_months_done_so_far(
    world: ProcsWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _history(world.root / "history")
    months = load_script("procs_months")
    real = months.evaluate_candidate
    calls: list[str] = []

    def interrupted_in_july(backend: Any, candidate: Any, settings: Any) -> Any:
        calls.append(candidate.commit)
        if candidate.commit == made["july"]:
            raise KeyboardInterrupt
        return real(backend, candidate, settings)

    monkeypatch.setattr(months, "evaluate_candidate", interrupted_in_july)
    argv = _argv(world, made, "2017-06", "2017-08")
    assert months.main(argv) == 130
    out = capsys.readouterr().out
    table = out[out.index("month    commit") :].splitlines()
    assert table[1].split()[:2] == ["2017-06", made["june"][:12]]
    assert table[1].split()[4:6] == ["yes", "yes"]
    assert not any(line.startswith("2017-08") for line in table)  # never begun
    assert len(_git(world.root / "history", "worktree", "list").splitlines()) == 1
    assert world.leftovers() == []
