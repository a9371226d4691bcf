"""A fingerprint of everything a user's checkout is: HEAD, index, files, refs, bisect state."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

_STATE_FILES = ("HEAD", "index", "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES")


def snapshot(repo: Path) -> dict[str, str]:
    state: dict[str, str] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        state[f"file:{rel}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    git_dir = repo / ".git"
    for name in _STATE_FILES:
        file = git_dir / name
        if file.exists():
            state[f"git:{name}"] = hashlib.sha256(file.read_bytes()).hexdigest()
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname) %(objectname)"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state["refs"] = refs
    worktrees = subprocess.run(
        ["git", "worktree", "list", "--porcelain"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state["worktrees"] = worktrees
    return state
