"""Durations as people write them in configs and flags: 90, 90s, 5m, 1h30m, 1.5h."""

from __future__ import annotations

import re

from bisector.errors import BisectorError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str | float | int, *, what: str = "duration") -> float:
    """Seconds in `text`; a bare number is seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise BisectorError(f"{what} must not be negative, got {text}")
        return float(text)
    raw = str(text).strip().lower()
    try:
        value = float(raw)
    except ValueError:
        pos, total = 0, 0.0
        for match in _PART.finditer(raw):
            if match.start() != pos:
                break
            total += float(match.group(1)) * _UNIT_S[match.group(2)]
            pos = match.end()
        if pos == 0 or pos != len(raw):
            raise BisectorError(
                f"{what}: cannot read {text!r} as a duration; write e.g. 90s, 5m or 1h30m"
            ) from None
        return total
    if value < 0:
        raise BisectorError(f"{what} must not be negative, got {text!r}")
    return value


def format_duration(seconds: float) -> str:
    """Short human form: 45s, 12m05s, 2h03m."""
    s = round(seconds)
    if s < 60:
        return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds:.2f}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
