"""Finding a repository's run directories (shared by `status`, `runs` and `mark`)."""

from __future__ import annotations

from pathlib import Path

from bisector.errors import BisectorError
from bisector.gitrepo import GitRepo
from bisector.run_index import remembered


def runs_root(repo: GitRepo) -> Path:
    return repo.common_dir / "bisector" / "runs"


def run_dirs(repo: GitRepo) -> list[Path]:
    """The repository's run directories, least recently active first: those under its
    runs/ and those its runs were given with --run-dir (bisector.run_index)."""
    root = runs_root(repo)
    candidates = list(root.iterdir()) if root.is_dir() else []
    candidates += remembered(repo.common_dir)
    found = {p.resolve() for p in candidates if (p / "journal.jsonl").is_file()}
    return sorted(found, key=lambda p: (p / "journal.jsonl").stat().st_mtime)


def check_run_dir(run_dir: Path) -> Path:
    if not (run_dir / "journal.jsonl").is_file():
        raise BisectorError(
            f"{run_dir} is not a bisector run directory (no journal.jsonl); pass the "
            "run's --run-dir (see `bisector runs`)"
        )
    return run_dir


def pick_run(repo: GitRepo, run_dir: Path | None) -> Path:
    """`run_dir` if given, else the repository's most recently active run."""
    if run_dir is not None:
        return check_run_dir(run_dir)
    found = run_dirs(repo)
    if not found:
        raise BisectorError(
            f"no bisector runs in {repo.root}; start one with `bisector run`, or pass --run-dir"
        )
    return found[-1]
