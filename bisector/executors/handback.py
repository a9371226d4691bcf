"""How an evaluation run elsewhere hands back its measurement and its files.

The evaluation's directory (its step logs, the collected logs, what the backend kept)
and its `Measurement` as `record.json` in it are packed into one gzip'd tar. It comes
back one of two ways, whatever node the evaluation ran on:

- `pod-log`: printed as base64 lines between markers at the end of the process's
  output; the driving process reads the pod's log through the API (nothing else to set
  up). Bounded (POD_LOG_LIMIT): the kubelet rotates a container's log at 10 MiB by
  default, so the files that do not fit are left out, the scored logs last, and named.
- `gs://bucket/prefix`: one object `<prefix>/<name>.tar.gz` (google-cloud-storage), read
  and then deleted by the driving process.

The record's paths are relative to the evaluation's directory: `receive` points them at
the directory the files were unpacked into.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bisector.errors import BisectorError, InfraError
from bisector.measure.measurement import Measurement

POD_LOG = "pod-log"  # the results come back in the pod's log (no store needed)
RECORD = "record.json"
LEFT_OUT = "handback.json"  # the files that did not fit, when some did not
MARK = "bisector-handback"
CHUNK = 6 * 1024  # base64 characters a line: under containerd's 16 KiB split of long lines
POD_LOG_LIMIT = 5 << 20  # bytes of the packed tar, under the kubelet's 10 MiB rotation
TAR_SLACK = 64 << 10  # the tar's own headers and padding, about


class HandbackError(InfraError):
    """The results could not be handed back, or what came back is not whole."""

    kind = "handback"


@dataclass(frozen=True)
class Packed:
    data: bytes
    left_out: tuple[str, ...] = ()


def record_of(m: Measurement, eval_dir: Path) -> dict[str, object]:
    """`m` as the record handed back: its files relative to the evaluation's directory."""
    data = m.to_dict()
    data["logs"] = [_relative(p, eval_dir) for p in m.logs]
    data["eval_dir"] = ""
    return data


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path  # outside the directory: named as it was, not handed back


def pack(eval_dir: Path, m: Measurement, limit: int | None = None) -> Packed:
    """The directory and `m` (as record.json) in one gzip'd tar of at most `limit` bytes:
    the files that do not fit are left out and named. The scored logs are kept first, then
    the rest of the log directory, then the other files, smallest first."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    record = json.dumps(record_of(m, eval_dir), sort_keys=True).encode()
    files = [p for p in sorted(eval_dir.rglob("*")) if p.is_file() and not p.is_symlink()]
    files = [p for p in files if p.name not in (RECORD, LEFT_OUT)]
    scored = {Path(p) for p in m.logs}
    files.sort(key=lambda p: (p not in scored, "logs" not in p.relative_to(eval_dir).parts,
                              p.stat().st_size))  # fmt: skip
    if limit is None:
        return Packed(_tar(eval_dir, record, files, []))
    kept: list[Path] = []
    left: list[str] = []
    room = limit - len(zlib.compress(record)) - TAR_SLACK
    for path in files:
        size = _compressed_size(path)
        if size <= room:
            kept.append(path)
            room -= size
        else:
            left.append(str(path.relative_to(eval_dir)))
    while True:
        data = _tar(eval_dir, record, kept, left)
        if len(data) <= limit or not kept:
            return Packed(data, tuple(left))
        left.append(str(kept.pop().relative_to(eval_dir)))  # the estimate was short


def _compressed_size(path: Path) -> int:
    """What `path` adds to the gzip'd tar, about: its own deflated size."""
    z = zlib.compressobj(6)
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            size += len(z.compress(chunk))
    return size + len(z.flush())


def _tar(root: Path, record: bytes, files: list[Path], left: list[str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar:
        _add(tar, RECORD, record)
        if left:
            _add(tar, LEFT_OUT, json.dumps({"left_out": left}).encode())
        for path in files:
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    return out.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def receive(data: bytes, eval_dir: Path, what: str) -> tuple[Measurement, tuple[str, ...]]:
    """Unpack `data` into `eval_dir`: the measurement, its files pointed there, and the
    files that were left out. HandbackError when it is not a whole handback."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            # "data": no absolute paths, no `..`, no links out, no devices.
            tar.extractall(eval_dir, filter="data")
        raw = json.loads((eval_dir / RECORD).read_text(encoding="utf-8"))
        m = Measurement.from_dict(raw)
        left: tuple[str, ...] = ()
        if (eval_dir / LEFT_OUT).is_file():
            said = json.loads((eval_dir / LEFT_OUT).read_text(encoding="utf-8"))
            left = tuple(str(p) for p in said["left_out"])
        if any(Path(p).is_absolute() for p in m.logs):
            # a path of the pod's, not of this machine (where the logs are gzipped in place)
            raise ValueError(f"a log outside the evaluation: {m.logs}")
    except (tarfile.TarError, OSError, EOFError, ValueError, TypeError, KeyError) as exc:
        raise HandbackError(f"{what}: the results handed back cannot be read: {exc}") from None
    m.logs = [str(eval_dir / p) for p in m.logs]
    m.eval_dir = str(eval_dir)
    return m, left


# -- pod-log ----------------------------------------------------------------------------


def log_lines(data: bytes) -> Iterator[str]:
    """`data` as lines of the process's output: a header (size, digest, lines), base64
    lines, an end line."""
    text = base64.b64encode(data).decode()
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    digest = hashlib.sha256(data).hexdigest()
    yield f"{MARK} begin {len(data)} {digest} {len(chunks)}"
    for chunk in chunks:
        yield f"{MARK} {chunk}"
    yield f"{MARK} end"


def from_log(log: str, what: str) -> bytes | None:
    """The handback in a pod's log; None when the log has none (its command never got to
    hand back). HandbackError when one began and is not whole (a rotated or cut log)."""
    lines = [line.strip() for line in log.splitlines() if line.startswith(MARK)]
    begins = [i for i, line in enumerate(lines) if line.startswith(f"{MARK} begin ")]
    if not begins:
        return None
    head = lines[begins[-1]].split()
    body = lines[begins[-1] + 1 :]
    if not body or body[-1] != f"{MARK} end":
        raise HandbackError(f"{what}: its log ends before the results handed back do")
    try:
        size, digest, count = int(head[2]), head[3], int(head[4])
        chunks = [line.split(" ", 1)[1] for line in body[:-1]]
        if len(chunks) != count:
            raise ValueError(f"{len(chunks)} of {count} lines")
        data = base64.b64decode("".join(chunks), validate=True)
    except (IndexError, ValueError) as exc:
        raise HandbackError(f"{what}: the results in its log are garbled ({exc})") from None
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise HandbackError(f"{what}: the results in its log are not whole (size or digest)")
    return data


# -- a bucket ---------------------------------------------------------------------------


# google-cloud-storage is imported when a bucket is used: a pod-log handback never loads it.


def object_name(destination: str, name: str) -> tuple[str, str]:
    from bisector.upload import parse_destination

    bucket, prefix = parse_destination(destination)
    return bucket, f"{prefix}{name}.tar.gz"


def put_object(destination: str, name: str, data: bytes) -> str:
    from google.api_core import exceptions as gexc

    from bisector.ci import gcs

    bucket, blob = object_name(destination, name)
    client = gcs.client()
    try:
        gcs.retrying(
            lambda: (
                client.bucket(bucket)
                .blob(blob)
                .upload_from_string(data, content_type="application/gzip", timeout=gcs.TIMEOUT)
            )
        )
    except (gexc.GoogleAPIError, OSError, BisectorError) as exc:
        raise HandbackError(f"cannot write gs://{bucket}/{blob}: {exc}") from None
    return f"gs://{bucket}/{blob}"


def get_object(destination: str, name: str) -> bytes | None:
    """The object's bytes; None when it does not exist (nothing was handed back)."""
    from google.api_core import exceptions as gexc

    from bisector.ci import gcs

    bucket, blob = object_name(destination, name)
    client = gcs.client()
    try:
        data: bytes = gcs.retrying(
            lambda: client.bucket(bucket).blob(blob).download_as_bytes(timeout=gcs.TIMEOUT)
        )
    except gexc.NotFound:
        return None
    except (gexc.GoogleAPIError, OSError, BisectorError) as exc:
        raise HandbackError(f"cannot read gs://{bucket}/{blob}: {exc}") from None
    return data


def delete_object(destination: str, name: str) -> None:
    from google.api_core import exceptions as gexc

    from bisector.ci import gcs

    bucket, blob = object_name(destination, name)
    client = gcs.client()
    try:
        gcs.retrying(lambda: client.bucket(bucket).blob(blob).delete(timeout=gcs.TIMEOUT))
    except gexc.NotFound:
        return
    except (gexc.GoogleAPIError, OSError, BisectorError) as exc:
        raise HandbackError(f"cannot delete gs://{bucket}/{blob}: {exc}") from None
