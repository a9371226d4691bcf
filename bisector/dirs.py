"""Creating the directories a command writes to, with one clear error when it can't."""

from __future__ import annotations

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
