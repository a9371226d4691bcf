"""A real git repository whose commits carry known metric values.

Each commit holds a file `value` (the metric a run of it would score), a file
`serial` (so no two commits share a tree) and, for commits that must not build,
a file `BROKEN`. With `revertable`, each commit adds a file of its own under `serial/`
instead of rewriting `serial`, so a commit's revert applies on a later one the way a
real change's does; `second` then gives mainline commits a file `value2`, added to
`value` by the test backends (two regressions in two files: each reverts alone).
`tangled` mainline commits write `value2` with a blank line after its number: a revert
of the commit that changed that number does not apply on them (git's merge conflicts
on adjacent changes), and applies again once a later commit drops the line.
Mainline commits are created in order; a pull request becomes a branch forked from
the previous mainline commit plus a `--no-ff` merge whose subject names the PR number,
like GitHub's. Built with `git fast-import`, so a 1024-commit history takes well under
a second.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git


@dataclass(frozen=True)
class PR:
    """Mainline commit `at` is the merge of PR `number`, whose own commits carry `values`."""

    at: int
    values: Sequence[int]
    number: int = 0
    broken: Collection[int] = ()  # indexes into `values` that do not build


@dataclass(frozen=True)
class BuiltCommit:
    commit: str
    value: int
    broken: bool
    subject: str
    mainline: bool


@dataclass
class BuiltRepo:
    path: Path
    mainline: list[str] = field(default_factory=list)  # first-parent chain, oldest first
    commits: dict[str, BuiltCommit] = field(default_factory=dict)
    pr_commits: dict[int, list[str]] = field(default_factory=dict)

    def value(self, commit: str) -> int:
        return self.commits[commit].value


def _data(text: str) -> str:
    raw = text.encode()
    return f"data {len(raw)}\n{text}\n"


class _Stream:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.mark = 0
        self.time = 1_496_000_000

    def commit(
        self,
        branch: str,
        subject: str,
        files: dict[str, str],
        parent: int | None,
        merge: int | None = None,
    ) -> int:
        self.mark += 1
        self.time += 60
        who = f"Dev {self.mark % 7} <dev{self.mark % 7}@example.com> {self.time} +0000"
        lines = [f"commit refs/heads/{branch}\n", f"mark :{self.mark}\n"]
        lines += [f"author {who}\n", f"committer {who}\n", _data(subject)]
        if parent is not None:
            lines.append(f"from :{parent}\n")
        if merge is not None:
            lines.append(f"merge :{merge}\n")
        lines.append("deleteall\n")
        for name, content in sorted(files.items()):
            lines.append(f"M 100644 inline {name}\n" + _data(content))
        self.parts.append("".join(lines) + "\n")
        return self.mark


def _files(value: int, serial: str, broken: bool) -> dict[str, str]:
    files = {"value": f"{value}\n", "serial": f"{serial}\n"}
    if broken:
        files["BROKEN"] = "this commit does not build\n"
    return files


class _Revertable:
    """Files for `revertable` histories: each commit adds `serial/<serial>` to the ones
    before it (every commit made earlier is its ancestor here), and `value2`."""

    def __init__(self, second: Sequence[int] | None, tangled: Collection[int] = ()) -> None:
        self.second = second
        self.tangled = tangled
        self.serials: list[str] = []
        self.value2: int | None = None

    def files(self, value: int, serial: str, broken: bool, index: int | None) -> dict[str, str]:
        self.serials.append(serial)
        files = {"value": f"{value}\n", **{f"serial/{s}": f"{s}\n" for s in self.serials}}
        if self.second is not None and index is not None:
            self.value2 = self.second[index]
        if self.value2 is not None:
            blank = "\n" if index is not None and index in self.tangled else ""
            files["value2"] = f"{self.value2}\n{blank}"
        if broken:
            files["BROKEN"] = "this commit does not build\n"
        return files


def build_repo(
    path: Path,
    values: Sequence[int],
    *,
    broken: Collection[int] = (),
    prs: Sequence[PR] = (),
    branch: str = "main",
    revertable: bool = False,
    second: Sequence[int] | None = None,
    tangled: Collection[int] = (),
) -> BuiltRepo:
    """Create a repository at `path` with mainline commits carrying `values`.

    `broken` holds mainline indexes that must fail to build. A mainline index
    named by a PR's `at` becomes that PR's merge (its own value is the PR's last).
    `revertable` and `second`: see the module docstring (`second` implies `revertable`).
    """
    kept = _Revertable(second, tangled) if revertable or second is not None else None

    def files_of(value: int, serial: str, broken: bool, index: int | None) -> dict[str, str]:
        if kept is None:
            return _files(value, serial, broken)
        return kept.files(value, serial, broken, index)

    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch=branch)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Test User")
        cfg.set_value("user", "email", "test@example.com")
    by_index = {pr.at: pr for pr in prs}
    stream = _Stream()
    marks: list[tuple[int, int, bool, str, bool]] = []  # mark, value, broken, subject, mainline
    main_marks: list[int] = []
    pr_marks: dict[int, list[int]] = {}
    previous: int | None = None
    for index, value in enumerate(values):
        pr = by_index.get(index)
        if pr is None or previous is None:
            subject = f"Commit {index}: value {value}"
            is_broken = index in broken
            files = files_of(value, str(index), is_broken, index)
            mark = stream.commit(branch, subject, files, previous)
            marks.append((mark, value, is_broken, subject, True))
        else:
            number = pr.number or 1000 + index
            tip = previous
            pr_marks[number] = []
            for j, pr_value in enumerate(pr.values):
                subject = f"PR {number} part {j + 1}: value {pr_value}"
                pr_broken = j in pr.broken
                files = files_of(pr_value, f"{index}.{j}", pr_broken, None)
                tip = stream.commit(f"pr-{number}", subject, files, tip)
                marks.append((tip, pr_value, pr_broken, subject, False))
                pr_marks[number].append(tip)
            subject = f"Merge pull request #{number} from dev/pr-{number}"
            last = pr.values[-1] if pr.values else value
            is_broken = index in broken
            files = files_of(last, f"{index}.merge", is_broken, index)
            mark = stream.commit(branch, subject, files, previous, merge=tip)
            marks.append((mark, last, is_broken, subject, True))
        main_marks.append(mark)
        previous = mark
    with tempfile.TemporaryFile("w+b") as fh:
        fh.write("".join(stream.parts).encode())
        fh.write(b"done\n")
        fh.seek(0)
        repo.git.execute(
            ["git", "fast-import", "--quiet", "--done", f"--export-marks={path}/.git/marks"],
            istream=fh,
        )
    mark_to_sha: dict[int, str] = {}
    for line in (path / ".git" / "marks").read_text().splitlines():
        mark_text, sha = line.split()
        mark_to_sha[int(mark_text[1:])] = sha
    (path / ".git" / "marks").unlink()
    repo.git.reset("--hard", "--quiet")
    built = BuiltRepo(path)
    for mark, value, is_broken, subject, mainline in marks:
        sha = mark_to_sha[mark]
        built.commits[sha] = BuiltCommit(sha, value, is_broken, subject, mainline)
    built.mainline = [mark_to_sha[m] for m in main_marks]
    built.pr_commits = {n: [mark_to_sha[m] for m in ms] for n, ms in pr_marks.items()}
    return built


def run_git(repo: Path, *args: str) -> str:
    """`git ARGS` in `repo`; its output, stripped."""
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit_value(repo: Path, value: int, serial: str, subject: str) -> str:
    """A commit on `repo`'s branch carrying `value` and `serial` as build_repo's do."""
    (repo / "value").write_text(f"{value}\n")
    (repo / "serial").write_text(f"{serial}\n")
    run_git(repo, "add", "value", "serial")
    run_git(repo, "commit", "-q", "-m", subject)
    return run_git(repo, "rev-parse", "HEAD")
