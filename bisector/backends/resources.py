"""What a run is about to create (for `bisector cleanup`), and the build cache.

`ResourceRecord` is `<run_dir>/resources.json`: before a backend creates a
cluster it records the cluster and the exact steps that tear it down; after a
successful teardown it removes the entry. A run that crashes, is killed, or
loses its machine leaves the entries behind, and `bisector cleanup` replays
them. Writes are atomic (temp file + rename) so a crash mid-write never leaves
a record that cannot be read.

`BuildCache` keeps build outputs by git tree id (plus the instrumentation
patch's hash), so a repeat or a re-evaluation of the same tree skips the build.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.steps import Step
from bisector.errors import BisectorError

RECORD_NAME = "resources.json"
_LOCK = threading.Lock()  # parallel slots share one record


@dataclass(frozen=True)
class Resource:
    id: str  # unique within the run, e.g. "gce/kubemark/bisector-0"
    backend: str
    what: str  # human words: "kubemark cluster bisector-0-kubemark-master"
    teardown: tuple[Step, ...]  # run in order, each best effort
    fallback: tuple[Step, ...] = ()  # used when a teardown step's directory is gone

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "backend": self.backend,
            "what": self.what,
            "recorded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "teardown": [s.to_json() for s in self.teardown],
            "fallback": [s.to_json() for s in self.fallback],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Resource:
        def steps(key: str) -> tuple[Step, ...]:
            raw = data.get(key) or []
            assert isinstance(raw, list)
            return tuple(Step.from_json(s) for s in raw)

        return cls(
            str(data["id"]),
            str(data["backend"]),
            str(data["what"]),
            steps("teardown"),
            steps("fallback"),
        )


class ResourceRecord:
    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / RECORD_NAME

    def load(self) -> list[Resource]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise BisectorError(
                f"{self.path} cannot be read ({exc}); inspect it and delete leftovers by hand"
            ) from None
        try:
            return [Resource.from_json(r) for r in data.get("resources", [])]
        except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise BisectorError(
                f"{self.path} is not a resource record ({exc!r}); delete leftovers by hand"
            ) from None

    def add(self, resource: Resource) -> None:
        with _LOCK:
            current = [r for r in self.load() if r.id != resource.id]
            self._write([*current, resource])

    def remove(self, resource_id: str) -> None:
        with _LOCK:
            current = self.load()
            kept = [r for r in current if r.id != resource_id]
            if len(kept) != len(current):
                self._write(kept)

    def ids(self) -> list[str]:
        return [r.id for r in self.load()]

    def _write(self, resources: Sequence[Resource]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not resources:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        blob = json.dumps({"version": 1, "resources": [r.to_json() for r in resources]}, indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".resources.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(blob + "\n")
                out.flush()
                os.fsync(out.fileno())
            Path(tmp).replace(self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def cache_key(tree: str, patch: bytes | None) -> str:
    """Tree id, plus the patch's hash when one is applied before building."""
    if patch is None:
        return tree
    return f"{tree}-{hashlib.sha256(patch).hexdigest()[:12]}"


class BuildCache:
    """Build outputs stored under `<root>/<key>/`, copied back into a worktree on a hit."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        return self.root / key

    def has(self, key: str) -> bool:
        return (self.entry(key) / "complete").is_file()

    def store(self, key: str, worktree: Path, relpaths: Iterable[str]) -> None:
        """Copy the `relpaths` that exist; the entry appears only once complete."""
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=f".{key}."))
        try:
            for rel in relpaths:
                if (worktree / rel).exists():
                    _copy(worktree / rel, staging / rel)
            (staging / "complete").write_text(key + "\n", encoding="utf-8")
            shutil.rmtree(self.entry(key), ignore_errors=True)
            staging.rename(self.entry(key))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def restore(self, key: str, worktree: Path, relpaths: Iterable[str]) -> None:
        for rel in relpaths:
            if (self.entry(key) / rel).exists():
                _copy(self.entry(key) / rel, worktree / rel)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
    else:
        shutil.copy2(src, dst)
