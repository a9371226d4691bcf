"""All git work of the tool: resolving revisions, tool-owned worktrees, `git bisect`, the lock.

The user's checkout is never touched. Candidates are checked out into worktrees
the tool owns, and the bisect session itself runs in a tool-owned worktree with
`--no-checkout`: refs/bisect/* and BISECT_* files are per-worktree in git, so
the user's HEAD, index, files and any bisect they have in progress stay as they were.

Everything else in the repository is the user's too, so the tool's git commands
touch only what they name (git 2.39.5 checked):
- The tool's worktrees are added and removed by path (`worktree add --force` takes
  over a path whose directory is gone, `worktree remove --force` drops a missing
  one), never with `git worktree prune`: that deletes the metadata of *every*
  worktree whose directory is missing right then, the user's on an unplugged drive
  too, and that directory is then no longer a checkout.
- A worktree path is reused only when it is a worktree of this repository
  registered at that path; anything else there is not the tool's to check out over.
- The user's hooks never run (`core.hooksPath=/dev/null`): `post-checkout` runs for
  every checkout in any worktree of the repository, and one that fails makes the
  checkout fail (its exit status becomes git checkout's).
- No branch, tag, stash, config or index of the user's is written: candidates are
  detached checkouts; the user's bisect lives in their worktree's own refs/bisect.
- A candidate with culprits reverted (`revert_onto`) is a commit of the tool's own, made
  in a temporary index (never the user's) and kept under refs/bisector/reverts/ so git
  never collects it: its author, committer and dates are fixed, so the same reverts on
  the same commit are the same commit in every run, and a resumed run finds it again.

No `git.GitCommandError` leaves this module: a failing git command is a
`GitFailure` (a BisectorError: one line naming the command and git's own last
error line), except a candidate's checkout that fails because objects are
missing (a partial clone whose promisor remote is out of reach, a mirror or a
damaged repository lacking a blob): that is a `CheckoutError` (an InfraError),
so the candidate is a skip and the run goes on.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import git

from bisector.errors import BisectorError, InfraError
from bisector.locking import exclusive

_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")  # no hook file is found under /dev/null
_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_ONLY_SKIPPED = "only 'skip'ped commits left to test"
_HASH_LINE = re.compile(r"^([0-9a-f]{40})$", re.MULTILINE)
# git's words for an object it needs and does not have. Seen with git 2.39 in
# tests/test_gitrepo.py: a real partial clone whose promisor remote is gone ("could
# not fetch <sha> from promisor remote") and a deleted loose blob ("unable to read
# <sha>"); the other alternatives are git's wording for missing/corrupt objects.
_MISSING_OBJECT = re.compile(
    r"promisor remote|unable to read (?:tree|sha1 file)|bad object|missing (?:blob|tree|object)"
    r"|is not a valid object|reference is not a tree|could not fetch|did not receive expected"
    r"|unable to read|object file .* is empty|corrupt|not a valid '?tree",
    re.IGNORECASE,
)

_UNWRITTEN = re.compile(r"^\s*error: unable to write file ")
REVERTS_REF = "refs/bisector/reverts"
_REVERT_AUTHOR = ("bisector", "bisector@localhost")


def _free_space(path: Path) -> str:
    """The free space of the filesystem `path` is (or would be) on, e.g. `1.2 MiB`."""
    for place in (path, *path.parents):
        with contextlib.suppress(OSError):
            return f"{shutil.disk_usage(place).free / (1 << 20):.1f} MiB"
    return "unknown"


class GitFailure(BisectorError):
    """A git command failed; the message is one line. `stdout` keeps what it printed."""

    def __init__(self, message: str, *, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.stdout = stdout
        self.stderr = stderr


class CheckoutError(InfraError):
    """A candidate cannot be checked out (objects missing): skip it, go on with the run."""

    kind = "checkout"


@dataclass(frozen=True)
class CommitInfo:
    commit: str
    tree: str
    subject: str
    author: str
    date: str
    parents: tuple[str, ...]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


def _last_error_line(text: str) -> str:
    """git's own message: the last `fatal:`/`error:` line, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    line = (errors or lines or ["no output"])[-1]
    return line if len(line) <= 300 else line[:299] + "…"


@dataclass(frozen=True)
class Reverted:
    """`base` with `culprits` reverted: the tool's commit of that tree, or why there is none
    (a revert that does not apply: the culprit whose revert conflicted and the files)."""

    base: str
    culprits: tuple[str, ...]  # in the order they were reverted (newest first)
    commit: str | None = None
    tree: str | None = None
    conflict_with: str | None = None  # the culprit whose revert did not apply
    conflict_files: tuple[str, ...] = ()

    @property
    def applied(self) -> bool:
        return self.commit is not None


@dataclass(frozen=True)
class RepoGiven:
    """How a repository's path was given, so an error about it names the fix that works
    for that way: `--repo` for the flag or the current directory, the key for a config's
    `repo` (where --repo changes nothing)."""

    said: str  # "--repo /x", "the current directory /x", "FILE: key `...repo` = '/x'"
    fix: str

    @classmethod
    def flag(cls, path: Path | str | None) -> RepoGiven:
        """`--repo PATH`, or without it the current directory (the default)."""
        if path is None:
            return cls(
                f"the current directory {Path.cwd()}",
                "run bisector inside a checkout of the repository to bisect, or pass --repo DIR",
            )
        return cls(f"--repo {path}", "pass --repo the path of a checkout of the repository")

    @classmethod
    def key(cls, where: str, path: Path | str) -> RepoGiven:
        """A config key (`where`, as Section.where says it) that holds the path."""
        return cls(
            f"{where} = {str(path)!r}",
            "set that key to the path of a checkout of the repository (--repo does not "
            "change a config's repo)",
        )


def _not_a_checkout(path: Path | str, given: RepoGiven | None, *, bare: bool = False) -> str:
    """Why `path` cannot be bisected, and the fix for how it was given."""
    given = given or RepoGiven(str(path), "pass the path of a checkout of the repository")
    where = Path(path)
    if bare:
        problem = "is a bare repository (no checkout to build from)"
    elif not where.exists():
        problem = "does not exist"
    elif not where.is_dir():
        problem = "is not a directory"
    else:
        problem = "is not a git repository"
    return f"{given.said} {problem}; {given.fix}"


class GitRepo:
    """One repository, opened from any path inside it; `given`: how the path was given
    (for the fix an error about it names)."""

    def __init__(self, path: Path | str, *, given: RepoGiven | None = None) -> None:
        try:
            self.repo = git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise BisectorError(_not_a_checkout(path, given)) from None
        if self.repo.bare:
            raise BisectorError(_not_a_checkout(path, given, bare=True))
        self.root = Path(self.repo.working_tree_dir or path)
        self.common_dir = Path(self.repo.common_dir)

    def git(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
        """`git ARGS` in `cwd` (default: the checkout's root), `env` added to the
        environment; raises GitFailure (one line). The user's hooks never run (see the
        module docstring)."""
        cmd = git.Git(str(cwd or self.root))
        try:
            return str(cmd.execute(["git", *_NO_HOOKS, *args], env=env))
        except git.GitCommandError as exc:
            # GitPython shows them as "\n  stderr: '<text>'"; keep only git's text.
            stderr = str(exc.stderr or "").removeprefix("\n  stderr: '").removesuffix("'")
            stdout = str(exc.stdout or "").removeprefix("\n  stdout: '").removesuffix("'")
            raise GitFailure(
                f"git {' '.join(args[:2])} failed in {cwd or self.root}: "
                f"{_last_error_line(stderr or stdout)}",
                stdout=stdout,
                stderr=stderr,
            ) from None
        except OSError as exc:  # git itself missing, or the directory gone
            raise GitFailure(f"cannot run git in {cwd or self.root}: {exc}") from None

    def resolve(self, rev: str) -> str:
        """Full hash of the commit `rev` names."""
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except GitFailure:
            raise BisectorError(
                f"unknown revision {rev!r} in {self.root}; pass a commit hash, tag or branch "
                "that exists (git fetch may be needed)"
            ) from None

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            self.git("merge-base", "--is-ancestor", older, newer)
        except GitFailure:
            return False
        return True

    def check_range(self, good: str, bad: str) -> None:
        if good == bad:
            raise BisectorError(
                f"good and bad are the same commit {good[:12]}; pass a good commit older than bad"
            )
        if not self.is_ancestor(good, bad):
            if self.is_ancestor(bad, good):  # the likeliest slip: the two given the wrong way
                raise BisectorError(
                    f"bad {bad[:12]} is older than good {good[:12]} (its ancestor): are --good "
                    f"and --bad swapped? rerun with --good {bad[:12]} --bad {good[:12]}"
                )
            raise BisectorError(
                f"good {good[:12]} is not an ancestor of bad {bad[:12]}; pass a good commit "
                "from the history of the bad one"
            )

    def info(self, commit: str) -> CommitInfo:
        out = self.git("show", "-s", "--format=%H%n%T%n%P%n%an <%ae>%n%aI%n%s", commit)
        full, tree, parents, author, date, subject = (out.split("\n") + [""] * 6)[:6]
        return CommitInfo(full, tree, subject, author, date, tuple(parents.split()))

    def tree_of(self, commit: str) -> str:
        return self.git("rev-parse", f"{commit}^{{tree}}").strip()

    def changed_files(self, commit: str) -> list[str]:
        """The files `commit` changed against its first parent (a merge: what its branch
        brought in), repository-relative."""
        info = self.info(commit)
        if not info.parents:
            return self.git("ls-tree", "-r", "--name-only", commit).split("\n")
        out = self.git("diff-tree", "-r", "--name-only", "--no-commit-id", info.parents[0], commit)
        return [line for line in out.split("\n") if line]

    def revert_onto(self, base: str, culprits: Sequence[str]) -> Reverted:
        """`base` with each of `culprits` reverted against its first parent (a merge's:
        what its branch brought in; a commit inside a branch: that commit alone), newest
        first, as `git revert` would (a three-way apply of each reverse diff).

        Made in a temporary index: the user's index, HEAD and files are not touched. The
        result is a commit of the tool's own whose parent is `base`, with fixed author,
        committer and dates (the same culprits on the same base give the same commit,
        in any run), under REVERTS_REF. A revert that does not apply is no error: the
        culprit and the conflicting files come back instead of a commit.
        """
        ordered = self._newest_first(culprits)
        with tempfile.TemporaryDirectory(prefix="bisector-revert-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self.git("read-tree", base, env=env)
            for culprit in ordered:
                parent = self.info(culprit).parents[:1]
                if not parent:
                    return Reverted(base, tuple(ordered), conflict_with=culprit)
                patch = Path(scratch) / "patch"
                self.git(
                    "diff-tree", "-p", "--binary", "--full-index", f"--output={patch}",
                    parent[0], culprit,
                )  # fmt: skip
                if not patch.stat().st_size:
                    continue  # a same-tree merge: nothing to revert
                try:
                    self.git("apply", "--cached", "--reverse", "--3way", str(patch), env=env)
                except GitFailure:
                    unmerged = self.git("ls-files", "--unmerged", env=env)
                    files = sorted({line.split("\t", 1)[-1] for line in unmerged.splitlines()})
                    return Reverted(
                        base, tuple(ordered), conflict_with=culprit, conflict_files=tuple(files)
                    )
            tree = self.git("write-tree", env=env).strip()
        commit = self._tool_commit(tree, base, ordered)
        return Reverted(base, tuple(ordered), commit=commit, tree=tree)

    def _newest_first(self, commits: Sequence[str]) -> list[str]:
        """`commits` with every descendant before its ancestors (reverts apply newest
        first, as a person reverts a stack)."""
        out: list[str] = []
        for commit in commits:
            at = next((i for i, c in enumerate(out) if self.is_ancestor(c, commit)), len(out))
            out.insert(at, commit)
        return out

    def _tool_commit(self, tree: str, base: str, culprits: Sequence[str]) -> str:
        date = self.git("show", "-s", "--format=%ct", base).strip() + " +0000"
        name, email = _REVERT_AUTHOR
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        lines = [f"Revert {len(culprits)} culprit(s) on {base[:12]} (bisector)", ""]
        lines += [f"revert {c} {self.info(c).subject}" for c in culprits]
        message = "\n".join(lines) + "\n"
        commit = self.git(
            "commit-tree", "--no-gpg-sign", tree, "-p", base, "-m", message, env=env
        ).strip()
        self.git("update-ref", f"{REVERTS_REF}/{commit}", commit)
        return commit

    def rev_list(
        self, good: str, bad: str, *, first_parent: bool = False, paths: tuple[str, ...] = ()
    ) -> list[str]:
        """Commits in good..bad, oldest first."""
        args = ["rev-list", "--reverse"]
        if first_parent:
            args.append("--first-parent")
        args += [bad, f"^{good}"]
        if paths:
            args += ["--", *paths]
        return self.git(*args).split()

    def bisect_midpoint(
        self,
        bad: str,
        goods: Sequence[str],
        *,
        first_parent: bool = False,
        paths: tuple[str, ...] = (),
    ) -> str | None:
        """The commit git bisect would test next between `goods` and `bad` (git's own
        choice: `git rev-list --bisect`); None when only `bad` is left."""
        args = ["rev-list", "--bisect"]
        if first_parent:
            args.append("--first-parent")
        args += [bad, *(f"^{g}" for g in goods)]
        if paths:
            args += ["--", *paths]
        out = self.git(*args).split()
        return out[0] if out and out[0] != bad else None

    # -- tool-owned worktrees -------------------------------------------------

    def add_worktree(self, path: Path, commit: str, *, checkout: bool = True) -> None:
        """A detached worktree at `path` on `commit`; reuses (and cleans) one already there.

        Raises CheckoutError (an InfraError: skip this candidate) when git lacks
        objects the checkout needs, GitFailure (a BisectorError) for anything else.
        """
        try:
            self._add_worktree(path, commit, checkout=checkout)
        except GitFailure as exc:
            said = f"{exc.stderr}\n{exc.stdout}".splitlines()
            # `error: unable to write file <path>`, one per file, is a checkout that could
            # not write (a full disk); the path is no git message (a real full run dir read
            # as missing objects from `.../corrupt_obj_deleter.go`).
            unwritten = [line.strip() for line in said if _UNWRITTEN.search(line)]
            if unwritten:
                raise BisectorError(
                    f"cannot check out {commit[:12]} into {path}: git could not write "
                    f"{len(unwritten):,} of its files ({unwritten[0]}); is that disk full "
                    f"({_free_space(path)} free)? Free some space or pass another --run-dir"
                ) from None
            missing = [line.strip() for line in said if _MISSING_OBJECT.search(line)]
            if missing:
                raise CheckoutError(
                    f"cannot check out {commit[:12]}: objects are missing from the repository "
                    f"({_last_error_line(missing[0])})"
                ) from None
            raise

    def _add_worktree(self, path: Path, commit: str, *, checkout: bool) -> None:
        admin = self._admin_dir(path)
        if admin is not None:
            # A run killed by SIGKILL may leave git's lock behind; we hold the repository
            # lock, so no other process of ours can be using this worktree.
            (admin / "index.lock").unlink(missing_ok=True)
            self.git("checkout", "--detach", "--force", "--quiet", commit, cwd=path)
            self.git("clean", "-fdxq", cwd=path)
            return
        if (path / ".git").exists():
            raise BisectorError(
                f"{path} is a git checkout that is not a worktree of {self.root} at that path; "
                "bisector checks out only into its own worktrees: move it, or pass another "
                "--run-dir"
            )
        if path.exists():
            shutil.rmtree(path)
        # --force: also when `path` is still registered from a worktree whose directory is
        # gone (a killed run, a run directory removed by hand): by path, no prune.
        args = ["worktree", "add", "--detach", "--force"]
        if not checkout:
            args.append("--no-checkout")
        self.git(*args, str(path), commit)

    def _admin_dir(self, path: Path) -> Path | None:
        """The admin directory of this repository's worktree at `path`, or None when
        `path` is not one (no `.git` file, or one of another repository or location)."""
        try:
            text = (path / ".git").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        admin = path / text.removeprefix("gitdir:").strip()  # absolute, or relative to path
        try:
            registered = admin / (admin / "gitdir").read_text(encoding="utf-8").strip()
            ours = admin.resolve().parent == (self.common_dir / "worktrees").resolve()
            here = registered.resolve() == (path / ".git").resolve()
        except OSError:
            return None
        return admin if ours and here else None

    def remove_worktree(self, path: Path) -> None:
        """Remove the tool's worktree at `path` and its metadata, by path (never a prune)."""
        try:
            self.git("worktree", "remove", "--force", str(path))
        except GitFailure:
            # Not registered, or a directory git does not take for one (half removed):
            # remove the directory, then its registration if any (a missing path is
            # removed by path).
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(GitFailure):
                self.git("worktree", "remove", "--force", str(path))
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)

    def worktrees_under(self, directory: Path) -> list[Path]:
        """The registered worktrees inside `directory` (the run directory's own)."""
        top = directory.resolve()
        out = self.git("worktree", "list", "--porcelain")
        paths = [
            Path(line[len("worktree ") :])
            for line in out.splitlines()
            if line.startswith("worktree ")
        ]
        return [p for p in paths if p.resolve() != top and top in p.resolve().parents]

    def remove_worktrees_under(self, directory: Path) -> None:
        """Remove every worktree registered inside `directory`, each by its path."""
        for path in self.worktrees_under(directory):
            self.remove_worktree(path)

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Only one `bisector run` per repository at a time."""
        return exclusive(
            self.common_dir / "bisector.lock",
            lambda holder: BisectorError(
                f"a bisect is already running on {self.root} ({holder}); wait for it to "
                "finish or stop it, then retry"
            ),
        )


class BisectSession:
    """`git bisect` in a worktree the tool owns; verdicts for any commit, in any order."""

    def __init__(self, repo: GitRepo, worktree: Path) -> None:
        self.repo = repo
        self.worktree = worktree
        self.first_bad: str | None = None
        self.only_skipped_left = False
        self.possible_culprits: list[str] = []
        self.started = False
        self.earlier_logs: list[str] = []  # `git bisect log` of this object's earlier sessions
        self.paths: tuple[str, ...] = ()

    def start(
        self, good: str, bad: str, *, first_parent: bool = False, paths: tuple[str, ...] = ()
    ) -> None:
        # A fresh session every time: after a crash the journal replays the verdicts.
        if self.started and (earlier := self._current_log().strip()):
            self.earlier_logs.append(earlier)  # a first-parent walk, before its descent
        self.started = True
        self.first_bad = None
        self.only_skipped_left = False
        self.possible_culprits = []
        self.paths = paths
        self.repo.remove_worktree(self.worktree)
        self.repo.add_worktree(self.worktree, bad, checkout=False)
        args = ["start", "--no-checkout"]
        if first_parent:
            args.append("--first-parent")
        args += [bad, good]
        if paths:
            args += ["--", *paths]
        self._bisect(*args)

    def _bisect(self, *args: str) -> str:
        try:
            out = self.repo.git("bisect", *args, cwd=self.worktree)
        except GitFailure as exc:
            if _ONLY_SKIPPED not in exc.stdout:  # git exits 2 when only skips are left
                why = _last_error_line(exc.stderr or exc.stdout)
                raise BisectorError(f"git bisect {args[0]} failed: {why}") from None
            out = exc.stdout
        match = _FIRST_BAD.search(out)
        if match:
            self.first_bad = match.group(1)
        if _ONLY_SKIPPED in out:
            self.only_skipped_left = True
            self.possible_culprits = _HASH_LINE.findall(out)
        return out

    def mark(self, commit: str, verdict: str) -> None:
        """Feed a verdict ('good', 'bad' or 'skip') to git bisect."""
        if verdict not in ("good", "bad", "skip"):
            raise ValueError(verdict)
        self._bisect(verdict, commit)

    @property
    def done(self) -> bool:
        return self.first_bad is not None or self.only_skipped_left

    def next_commit(self) -> str | None:
        """git bisect's own pick (BISECT_HEAD), or None once it has concluded."""
        if self.done:
            return None
        try:
            return self.repo.git("rev-parse", "--verify", "BISECT_HEAD", cwd=self.worktree).strip()
        except GitFailure:
            return None

    def remaining(self) -> list[str]:
        """Commits git bisect still considers possible culprits (incl. the current bad)."""
        if self.only_skipped_left:
            return list(self.possible_culprits)
        if not self.started:
            return []
        # What `git bisect visualize --format=%H` prints (git log --bisect over the
        # session's paths), in one git process: `git bisect` is a shell script that starts
        # a dozen processes for each call, and the search asks before every pick.
        args = ["log", "--bisect", "--format=%H", "--", *self.paths]
        try:
            listed = self.repo.git(*args, cwd=self.worktree).split()
            if not self.paths:
                return listed  # the bad end leads: the walk starts there
            # Path-limited, the bad end is left out where it does not touch the paths; git
            # bisect still names it when every commit that does is good, and SplitStrategy
            # takes remaining()[0] for the current bad.
            bad = self.repo.git("rev-parse", "--verify", "refs/bisect/bad", cwd=self.worktree)
        except GitFailure:
            return []
        bad = bad.strip()
        return [bad, *(c for c in listed if c != bad)]

    def _current_log(self) -> str:
        try:
            return self.repo.git("bisect", "log", cwd=self.worktree)
        except GitFailure:
            return ""

    def log(self) -> str:
        """`git bisect log` of every session so far, oldest first (the first-parent walk,
        then the descent into the merge), a blank line between them."""
        logs = [*self.earlier_logs, self._current_log().strip()]
        return "\n\n".join(log for log in logs if log) + "\n" if any(logs) else ""

    def close(self) -> None:
        # Removing the worktree drops its refs/bisect and BISECT_* with it; `bisect
        # reset` would check files out first, which is slow on a big repository.
        self.repo.remove_worktree(self.worktree)
