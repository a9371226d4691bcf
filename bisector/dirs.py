"""Creating the directories and files a command writes to, with one clear error when it can't.

Files holding credentials (kubeconfigs, tokens, keys) are made with `write_private`
or `private_file`: mode 0600 from the moment they exist, whatever the umask.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from bisector.errors import BisectorError


def ensure_dir(directory: Path, *, what: str, fix: str) -> Path:
    """mkdir -p `directory`, or a BisectorError naming `what` it is and how to `fix` it.

    A file in the way or a read-only parent is the user's input, not a crash.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BisectorError(
            f"cannot create {what} {directory}: {exc.strerror or exc}; {fix}"
        ) from None
    return directory


def private_file(path: Path) -> Path:
    """`path` as an existing file only its owner can read or write (0600).

    Creates it empty if missing (never briefly readable by others), tightens an
    existing one; for a tool that writes credentials into a file it is handed
    (`kind get kubeconfig > path`, KUBECONFIG=path). Raises BisectorError.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
    except OSError as exc:
        raise BisectorError(
            f"cannot create the private file {path}: {exc.strerror or exc}; "
            "check that its directory is writable"
        ) from None
    return path


def write_private(path: Path, text: str | bytes) -> Path:
    """Write `text` to `path` with mode 0600, atomically (temp file, fsync, rename).

    Readers see the old content or the new, never a part, and the file is never
    readable by others, not even while it is written. Raises BisectorError.
    """
    data = text.encode() if isinstance(text, str) else text
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(fd, 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise BisectorError(
            f"cannot write the private file {path}: {exc.strerror or exc}; "
            "check that its directory is writable"
        ) from None
    return path
