"""The error a log raises when it cannot give a verdict."""

from __future__ import annotations

from bisector.errors import BisectorError


class LogError(BisectorError):
    """The log is missing, unreadable, corrupt, truncated or not an apiserver log.

    Never a verdict: `score` exits 125 (git bisect skips the commit) and the run loop
    records a skip. It is a BisectorError so every other caller keeps treating it as one
    line for the user, never a traceback.
    """
