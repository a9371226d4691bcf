"""Durations as people write them in configs and flags: 90, 90s, 5m, 1h30m, 1.5h.

Every duration is checked where it is read, before anything is launched: a number
of seconds that is not finite (`nan`, `inf`, `1e400`), negative, or longer than
`MAX_DURATION_S` is one line saying so. `nan` compares false with everything (a
warmup of nan seconds launched a cluster, then `sleep` raised ValueError) and
`1e308` overflows every clock (OverflowError from the timeout's deadline).
"""

from __future__ import annotations

import math
import re

from bisector.errors import BisectorError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
# No wait, timeout or log window of a bisection is longer: past it, a value is a typo
# (a unit left out, an exponent) that would hold a cluster up, not a setting.
MAX_DURATION_S = 30 * 24 * 3600.0
_EXAMPLE = "write e.g. 90s, 5m or 1h30m"


def parse_duration(text: str | float | int, *, what: str = "duration") -> float:
    """Seconds in `text`; a bare number is seconds. BisectorError (one line) for anything
    that is not a finite duration from 0 to 30 days."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text)
    else:
        seconds = _parse_text(str(text), what)
    if math.isnan(seconds) or math.isinf(seconds):
        raise BisectorError(f"{what}: {text!r} is not a finite duration; {_EXAMPLE}")
    if seconds < 0:
        raise BisectorError(f"{what} must not be negative, got {text!r}")
    if seconds > MAX_DURATION_S:
        raise BisectorError(
            f"{what}: {text!r} is longer than {format_duration(MAX_DURATION_S)} (30 days), "
            f"surely a typo; {_EXAMPLE}"
        )
    return seconds


def _parse_text(text: str, what: str) -> float:
    raw = text.strip().lower()
    try:
        return float(raw)  # "90", "1.5", and also "nan", "inf", "1e308": checked by the caller
    except (ValueError, OverflowError):
        pass
    pos, total = 0, 0.0
    for match in _PART.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        pos = match.end()
    if pos == 0 or pos != len(raw):
        raise BisectorError(f"{what}: cannot read {text!r} as a duration; {_EXAMPLE}")
    return total


def format_duration(seconds: float) -> str:
    """Short human form: 45s, 12m05s, 2h03m."""
    s = round(seconds)
    if s < 60:
        return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds:.2f}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
