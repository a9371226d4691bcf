"""A run directory's files at rest: logs gzipped once scored, what the run uses on disk,
and pruning a finished run down to its reports.

An apiserver log is read while its evaluation is scored; after that only the report's
smoking gun, `bisector score` and uploads read it, and all of them read gzip (by
content, bisector.logs.sources). So the evaluator gzips each collected log right after
scoring (`gzip_logs`, isal's igzip at level 1: ~12x smaller, a 98 MB log in about a
third of a second) and journals the `.gz` names: the report links what is on disk.

`disk_use` says what a run directory holds; `prune_logs` drops the logs and keeps the
journal, the reports, each evaluation's command logs and the logs of the evaluations
named to keep (the report's smoking gun draws them: `bisector runs --prune`).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
LOGS_DIR = "logs"  # evals/NNN-<commit>/logs/: the collected apiserver log(s)
PRUNED_DIRS = (LOGS_DIR, "peek", "sim-master")  # what --prune drops from each evaluation
_CHUNK = 1 << 20


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def gzip_log(path: Path) -> Path:
    """`path` gzipped beside itself as `path.gz` (the original removed); `path` itself when
    it is not a local plain file or cannot be compressed: a log is never lost to this."""
    from isal import igzip

    target = path.with_name(path.name + ".gz")
    partial = path.with_name(path.name + ".gz.partial")
    try:
        if not path.is_file() or path.is_symlink() or _is_gzip(path):
            return path
        dst: IO[bytes] = igzip.open(partial, "wb", compresslevel=1)  # type: ignore[no-untyped-call]
        with path.open("rb") as src, dst:
            shutil.copyfileobj(src, dst, _CHUNK)
        partial.replace(target)
        path.unlink()
    except Exception:  # isal's errors are no OSError; the plain log stays, scored already
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        return path
    return target


def logs_in(directory: Path, pattern: str) -> list[Path]:
    """The log files `pattern` names in `directory`, each log once: a run killed inside
    `gzip_log` leaves LOG beside LOG.gz.partial or LOG.gz (the same lines twice, read as
    two rotated pieces they count double); LOG, still whole, is the one read."""
    found = [p for p in sorted(directory.glob(pattern)) if p.is_file()]
    names = {p.name for p in found}
    return [
        p
        for p in found
        if not p.name.endswith(".gz.partial")
        and not (p.name.endswith(".gz") and p.name[: -len(".gz")] in names)
    ]


def gzip_logs(logs: list[str]) -> list[str]:
    """Every local log of `logs` gzipped at rest; URLs (gs://, https://) as they are."""
    return [log if "://" in log else str(gzip_log(Path(log))) for log in logs]


@dataclass(frozen=True)
class DiskUse:
    """Bytes a run directory holds: in all, in its logs, and what `--prune` would keep."""

    total_bytes: int
    logs_bytes: int  # the evaluations' apiserver logs (and peeks) that --prune drops

    @property
    def kept_bytes(self) -> int:
        return self.total_bytes - self.logs_bytes


def _size(path: Path) -> int:
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    total = 0
    for p in path.rglob("*"):
        with contextlib.suppress(OSError):
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total


def _pruned(run_dir: Path, keep: Collection[Path]) -> list[Path]:
    evals = run_dir / "evals"
    if not evals.is_dir():
        return []
    kept = {k.absolute() for k in keep}
    return [
        e / name
        for e in sorted(evals.iterdir())
        if e.absolute() not in kept
        for name in PRUNED_DIRS
        if (e / name).exists()
    ]


def disk_use(run_dir: Path, keep: Collection[Path] = ()) -> DiskUse:
    """What `run_dir` holds; its logs but those of the evaluation directories `keep`."""
    return DiskUse(_size(run_dir), sum(_size(p) for p in _pruned(run_dir, keep)))


def prune_logs(run_dir: Path, keep: Collection[Path] = ()) -> int:
    """Drop the evaluations' logs but those of the evaluation directories `keep`; keep the
    journal, reports and command logs. Bytes freed."""
    freed = 0
    for path in _pruned(run_dir, keep):
        freed += _size(path)
        shutil.rmtree(path, ignore_errors=True)
    return freed


def size_text(size: int) -> str:
    """`338 MB`, `8.1 MB`, `412 kB`: what a person reads for a size on disk."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    return f"{size} B"
