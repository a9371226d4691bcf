"""Copying a run directory (evaluations' logs and scores, the report) to a GCS prefix.

    upload_run(run_dir, "gs://bucket/prefix", only=None) -> UploadResult

Every regular file under `run_dir` (or under the `only` paths, relative to it)
that a reader needs becomes the object `prefix/<path relative to run_dir>`.
Credentials never do (`bisector.credentials`): kubeconfigs, keys and tokens by
name, anything that is not a log, journal, report or score file, and any file
whose content holds a private key, a kubeconfig's client key or token, or a
bearer token. Those are listed in `UploadResult.withheld` with the reason. A file whose object
already exists with the same size is skipped, so calling it after every
evaluation re-sends only what is new or has grown (the journal, the report).
Git worktrees inside the run directory (a directory holding `.git`) and
symlinks are never uploaded. Transient GCS errors are retried with backoff
(tenacity, `bisector.ci.gcs.retrying`); a failure that persists, a missing
bucket or denied access raise one BisectorError line.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.api_core import exceptions as gexc

from bisector.ci import gcs
from bisector.ci.gcs import TIMEOUT, access_error, retrying
from bisector.credentials import withheld, withheld_by_name
from bisector.errors import BisectorError

UPLOAD_THREADS = 4
_TYPES = {
    ".log": "text/plain",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".jsonl": "application/x-ndjson",
}


@dataclass
class UploadResult:
    uploaded: list[str] = field(default_factory=list)  # object names written
    skipped: list[str] = field(default_factory=list)  # already there with the same size
    bytes_uploaded: int = 0
    # (path relative to the run directory, why): credentials and files a reader does not need
    withheld: list[tuple[str, str]] = field(default_factory=list)


def parse_destination(destination: str) -> tuple[str, str]:
    """`gs://bucket/some/prefix` -> ("bucket", "some/prefix/"); the prefix may be empty."""
    if not destination.startswith("gs://"):
        raise BisectorError(f"upload destination {destination!r} is not gs://BUCKET/PREFIX")
    bucket, _, prefix = destination.removeprefix("gs://").partition("/")
    if not bucket:
        raise BisectorError(f"upload destination {destination!r} names no bucket")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


def upload_run(
    run_dir: Path | str,
    destination: str,
    *,
    only: Iterable[Path | str] | None = None,
    client: Any | None = None,
) -> UploadResult:
    """Upload `run_dir` (or just the files/directories `only`, relative to it) to `destination`."""
    root = Path(run_dir).resolve()
    if not root.is_dir():
        raise BisectorError(f"run directory {run_dir} does not exist; nothing to upload")
    bucket_name, prefix = parse_destination(destination)
    files = sorted(set(_files(root, only)))
    storage = client if client is not None else gcs.client()
    bucket = storage.bucket(bucket_name)
    existing = _existing_sizes(storage, bucket_name, prefix)
    result = UploadResult()
    todo = []
    for path in files:
        relative = path.relative_to(root).as_posix()
        if why := withheld_by_name(path.name):
            result.withheld.append((relative, why))
            continue
        name = prefix + relative
        if existing.get(name) == path.stat().st_size:
            result.skipped.append(name)
        else:
            todo.append((path, name))

    def send(item: tuple[Path, str]) -> int | str:
        """Bytes sent, or why the file was withheld (its content holds a credential)."""
        path, name = item
        if why := withheld(path):
            return why
        blob = bucket.blob(name)
        content_type = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
        try:
            retrying(
                lambda: blob.upload_from_filename(
                    str(path), content_type=content_type, timeout=TIMEOUT, retry=None
                )
            )
        except gexc.GoogleAPIError as exc:
            raise access_error(exc, f"gs://{bucket_name}/{name}") from None
        return path.stat().st_size

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        for (path, name), sent in zip(todo, pool.map(send, todo), strict=True):
            if isinstance(sent, str):
                result.withheld.append((path.relative_to(root).as_posix(), sent))
                continue
            result.uploaded.append(name)
            result.bytes_uploaded += sent
    return result


def _files(root: Path, only: Iterable[Path | str] | None) -> Iterator[Path]:
    starts = [root] if only is None else [root / p for p in only]
    for start in starts:
        path = start.resolve() if not start.is_symlink() else start
        if root != path and root not in path.parents:
            raise BisectorError(f"{start} is outside the run directory {root}; nothing uploaded")
        if start.is_symlink():
            continue
        if start.is_file():
            yield start
        elif start.is_dir():
            yield from _walk(start)
        else:
            raise BisectorError(f"{start} does not exist; nothing uploaded")


def _walk(top: Path) -> Iterator[Path]:
    for directory, subdirs, names in os.walk(top):
        here = Path(directory)
        if (here / ".git").exists():  # a git worktree the tool made: not ours to publish
            subdirs.clear()
            continue
        subdirs[:] = [d for d in subdirs if not (here / d).is_symlink()]
        for name in names:
            path = here / name
            if path.is_file() and not path.is_symlink():
                yield path


def _existing_sizes(client: Any, bucket: str, prefix: str) -> dict[str, int]:
    def listing() -> dict[str, int]:
        blobs = client.list_blobs(bucket, prefix=prefix, timeout=TIMEOUT, retry=None)
        return {b.name: int(b.size or 0) for b in blobs}

    try:
        sizes: dict[str, int] = retrying(listing)
    except gexc.GoogleAPIError as exc:
        raise access_error(exc, f"bucket gs://{bucket}") from None
    return sizes
