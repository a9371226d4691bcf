"""Where log bytes come from: paths, `-`, gzip (by content), `gs://` objects, `https://` URLs.

Every source opens as a binary stream of *decompressed* log text. Gzip is
recognised by its magic bytes, never by name: `gsutil cp -z` stores `.log`
objects gzip-encoded without a suffix, and GCS may or may not transcode them.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from isal import isal_zlib

from bisector.errors import BisectorError
from bisector.logs.errors import LogError

GZIP_MAGIC = b"\x1f\x8b"
_GCS_CHUNK = 8 << 20
_GCS_CHUNK_RETRY_S = 20.0
# urllib applies it to connecting and to each read: a dead host fails in 20 s, not 60.
_HTTP_TIMEOUT_S = 20.0
# logrotate suffixes: `.3`, `.3.gz` (higher is older) and `-20170602-1496400000[.gz]`.
_NUMBERED = re.compile(r"\.(\d+)(?:\.gz)?$")
_DATED = re.compile(r"-(\d{8})(?:-(\d+))?(?:\.gz)?$")

_BAD_GZIP: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    gzip.BadGzipFile,
    # A corrupt deflate stream inflated by isal (not an OSError; isal's stubs call it a value).
    cast("type[BaseException]", isal_zlib.IsalError),
)


@dataclass(frozen=True)
class Source:
    """One log file of a run, as the user named it."""

    spec: str
    # When the file was last written: glog headers have no year, this supplies it.
    mtime: datetime

    @property
    def is_local_file(self) -> bool:
        return not _is_remote(self.spec) and self.spec != "-"

    def rotation_age(self) -> tuple[int, int]:
        """Order key from the name alone: older rotations sort first, the live file last."""
        name = self.spec.rstrip("/").rsplit("/", 1)[-1]
        if match := _DATED.search(name):
            return (0, int(match.group(2) or match.group(1)))
        if match := _NUMBERED.search(name):
            return (0, -int(match.group(1)))
        return (1, 0)


def _is_remote(spec: str) -> bool:
    return spec.startswith(("gs://", "https://", "http://"))


def resolve(spec: str | Path) -> Source:
    """Check that `spec` can be read and learn its mtime; bad input raises BisectorError."""
    text = str(spec)
    if text == "-" or _is_remote(text):
        mtime = _gcs_blob(text).updated if text.startswith("gs://") else None
        return Source(text, mtime or datetime.now(UTC))
    path = Path(text)
    try:
        stat = path.stat()
    except OSError as exc:
        raise LogError(
            f"cannot read log {text}: {exc.strerror}; check the path or pass - for stdin"
        ) from None
    if not path.is_file():
        raise LogError(f"log {text} is not a regular file; pass the log file itself")
    return Source(text, datetime.fromtimestamp(stat.st_mtime, UTC))


@contextlib.contextmanager
def open_source(source: Source) -> Iterator[IO[bytes]]:
    """The decompressed bytes of `source`; a corrupt gzip surfaces as BisectorError on read."""
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(_open_raw(source.spec))
        head = _peek(raw, 2)
        if head == GZIP_MAGIC:
            yield stack.enter_context(_GzipErrors(source.spec, _inflate(raw)))
        else:
            yield raw


def _inflate(raw: IO[bytes]) -> IO[bytes]:
    # isal inflates ~3x faster than zlib, on a thread of its own (it escapes the GIL);
    # not isal's igzip_threaded reader, which can end a read early (bisector.logs.inflate).
    from bisector.logs.inflate import inflate_ahead

    return inflate_ahead(raw)


class _GzipErrors:
    """Turns the inflater's exceptions into one clear BisectorError line."""

    def __init__(self, spec: str, inner: IO[bytes]) -> None:
        self._spec, self._inner = spec, inner

    def __enter__(self) -> IO[bytes]:
        return self  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(*_BAD_GZIP):
            self._inner.close()

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read(size)
        except _BAD_GZIP as exc:
            raise self._error(exc) from None

    def readinto(self, buffer: memoryview) -> int:
        try:
            n: int = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        except _BAD_GZIP as exc:
            raise self._error(exc) from None
        return n

    def _error(self, exc: BaseException) -> LogError:
        return LogError(f"{self._spec} is a corrupt or truncated gzip file ({exc}); fetch it again")


def _peek(stream: IO[bytes], size: int) -> bytes:
    if stream.seekable():
        head = stream.read(size)
        stream.seek(0)
        return head
    peek = getattr(stream, "peek", None)
    if peek is None:  # pragma: no cover - every opener below returns a peekable stream
        raise TypeError("stream cannot be peeked")
    return bytes(peek(size)[:size])


@contextlib.contextmanager
def _open_raw(spec: str) -> Iterator[IO[bytes]]:
    if spec == "-":
        yield sys.stdin.buffer
    elif spec.startswith("gs://"):
        from google.cloud.storage.fileio import BlobReader  # type: ignore[import-untyped]
        from google.cloud.storage.retry import DEFAULT_RETRY  # type: ignore[import-untyped]

        from bisector.ci import gcs

        # raw_download: bytes as stored; gzip (if any) is then found by its magic.
        # Each chunk: a connect timeout and a bounded retry budget (not the library's
        # two minutes), so a connection lost mid-stream ends in one line, soon.
        reader: Any = BlobReader(
            _gcs_blob(spec),
            chunk_size=_GCS_CHUNK,
            raw_download=True,
            timeout=gcs.TIMEOUT,
            retry=DEFAULT_RETRY.with_timeout(_GCS_CHUNK_RETRY_S),
        )
        with reader:
            yield reader
    elif _is_remote(spec):
        import urllib.error  # here: ~20 ms of imports that scoring a local file never needs
        import urllib.request

        try:
            response = urllib.request.urlopen(spec, timeout=_HTTP_TIMEOUT_S)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise BisectorError(f"cannot fetch log {spec}: {exc}; check the URL") from None
        with response:
            yield io.BufferedReader(response, buffer_size=1 << 20)
    else:
        with Path(spec).open("rb") as handle:
            yield handle


def _gcs_blob(spec: str) -> Any:
    from google.api_core import exceptions as gexc

    from bisector.ci import gcs

    bucket_name, _, name = spec.removeprefix("gs://").partition("/")
    if not bucket_name or not name:
        raise BisectorError(f"{spec} is not a gs://BUCKET/OBJECT address")
    bucket = gcs.client().bucket(bucket_name)
    try:
        # Bounded: a connect timeout, our retries only; offline -> gcs.Unreachable, one line.
        blob = gcs.retrying(lambda: bucket.get_blob(name, timeout=gcs.TIMEOUT, retry=None))
    except gexc.GoogleAPIError as exc:
        raise BisectorError(f"cannot read {spec}: {exc}; check the address and access") from None
    if blob is None:
        raise BisectorError(f"{spec} does not exist; check the bucket and object name")
    return blob
