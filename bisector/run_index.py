"""The run directories a repository knows beyond its own runs/: those given with --run-dir."""

from __future__ import annotations

import os
from pathlib import Path

INDEX_NAME = "run-dirs"  # <common git dir>/bisector/run-dirs: one absolute path a line


def index_path(common_dir: Path) -> Path:
    return common_dir / "bisector" / INDEX_NAME


def remember(common_dir: Path, run_dir: Path) -> None:
    """Record `run_dir` so `bisector runs`, `status` and `--prune` see it (a run started
    with --run-dir elsewhere, e.g. the demo's). Its own runs/ need no record."""
    run_dir = run_dir.resolve()
    if run_dir.is_relative_to((common_dir / "bisector" / "runs").resolve()):
        return
    if run_dir in remembered(common_dir):
        return
    path = index_path(common_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    # One short line appended (O_APPEND): two runs starting at once cannot interleave it.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{run_dir}\n".encode())
    finally:
        os.close(fd)


def remembered(common_dir: Path) -> list[Path]:
    """Every directory recorded, once each, in the order recorded (gone ones included:
    callers check what is there)."""
    try:
        text = index_path(common_dir).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [Path(p) for p in dict.fromkeys(line for line in text.splitlines() if line.strip())]
