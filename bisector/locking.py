"""One process at a time: an flock on a file that names its holder; one repository per run dir.

`lock_run_dir` keeps two processes out of one run directory; `claim_run_dir`
keeps two clones out of it (their journals, worktrees and measurements would mix).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector.dirs import ensure_dir
from bisector.errors import BisectorError


@contextlib.contextmanager
def exclusive(path: Path, busy: Callable[[str], BisectorError]) -> Iterator[None]:
    """Hold `path` locked while the block runs, or raise `busy(holder)` at once.

    The kernel drops the lock when the process dies, even by kill -9, so a crashed
    run never leaves a stale lock behind.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BisectorError(
            f"cannot open lock file {path}: {exc.strerror or exc}; make it a writable file"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text(encoding="utf-8").strip() or "another process"
            raise busy(holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        yield
    finally:
        os.close(fd)


OWNER_FILE = "owner.json"
LOCK_FILE = "run.lock"


def lock_run_dir(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Hold `run_dir/run.lock` (flock) while the block runs; BisectorError if another process does.

    Two processes never write one run directory at once (journal, worktrees,
    evaluations). Released on exit, and by the kernel on kill -9.
    """
    ensure_dir(run_dir, what="run directory", fix="pass another --run-dir")
    return exclusive(
        run_dir / LOCK_FILE,
        lambda holder: BisectorError(
            f"run directory {run_dir} is in use by another bisector ({holder}); wait for it "
            "to finish or pass another --run-dir"
        ),
    )


def claim_run_dir(run_dir: Path, common_git_dir: Path) -> None:
    """Record the repository (its common git dir) that owns `run_dir`, or refuse another's.

    On first use writes `run_dir/owner.json` (fsync'd); later calls from the same
    repository (any worktree of it) pass; a different clone raises BisectorError
    saying which repository owns the directory and what to do. Hold
    `lock_run_dir(run_dir)` around it so two first uses cannot race.
    """
    mine = str(Path(common_git_dir).resolve())
    marker = run_dir / OWNER_FILE
    try:
        text = marker.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except OSError as exc:
        raise BisectorError(
            f"cannot read {marker}: {exc.strerror or exc}; make it readable or pass another "
            "--run-dir"
        ) from None
    if text is None:
        ensure_dir(run_dir, what="run directory", fix="pass another --run-dir")
        _write_owner(marker, mine)
        return
    owner = _owner_in(text)
    if owner is None:
        raise BisectorError(
            f"{marker} does not say which repository owns {run_dir}; delete it if this run "
            "directory is yours, or pass another --run-dir"
        )
    if owner != mine:
        raise BisectorError(
            f"run directory {run_dir} belongs to another clone (git dir {owner}), not this one "
            f"({mine}); pass another --run-dir for this clone"
        )


@contextlib.contextmanager
def own_run_dir(run_dir: Path, common_git_dir: Path) -> Iterator[None]:
    """`lock_run_dir` and `claim_run_dir` together: what a run's setup holds while it runs."""
    with lock_run_dir(run_dir):
        claim_run_dir(run_dir, common_git_dir)
        yield


def _owner_in(text: str) -> str | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    owner = doc.get("git_common_dir") if isinstance(doc, dict) else None
    return owner if isinstance(owner, str) and owner else None


def _write_owner(marker: Path, common_git_dir: str) -> None:
    tmp = marker.with_name(marker.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump({"git_common_dir": common_git_dir}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(marker)
    except OSError as exc:
        raise BisectorError(
            f"cannot write {marker}: {exc.strerror or exc}; check that the run directory "
            "is writable"
        ) from None
