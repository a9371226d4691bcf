"""Cacher-side messages: queue high-water marks, forced watcher closes, dispatch progress.

They are rare, so each is searched only in chunks holding its literal text, and every
match must start the message of a real log line (quoted copies inside other lines or
continuation lines are not counted).
"""

from __future__ import annotations

import re

from bisector.logs import patterns as p
from bisector.logs.partial import Partial, ScanSettings, in_window
from bisector.logs.timestamps import line_seconds

SATURATED = 100  # capacity of the cacher's incoming channel


def dated(
    pattern: re.Pattern[bytes],
    chunk: bytes | bytearray,
    s: ScanSettings,
    leads: tuple[bytes, ...] = (b"",),
) -> list[tuple[re.Match[bytes], float]]:
    """Matches that start the message of a real log line (not quoted text), with their time."""
    found = []
    for match in pattern.finditer(chunk):
        start = chunk.rfind(b"\n", 0, match.start()) + 1
        t = line_seconds(chunk, start, s.reference)
        if t is None:
            continue  # a continuation line quoting the message
        msg = chunk.find(b"] ", start, match.start())
        if msg >= 0:
            msg += 2
        elif (msg := chunk.find(b'"msg":"', start, match.start())) >= 0:
            msg += 7
        if msg < 0 or chunk[msg : match.start()] not in leads:
            continue  # the message quotes the text somewhere inside
        found.append((match, t))
    return found


def cacher_hwm(chunk: bytes | bytearray, s: ScanSettings, out: Partial) -> None:
    for match, t in dated(p.CACHER_HWM, chunk, s):
        kind, value = match.group(1).decode("utf-8", "replace"), int(match.group(2))
        if value >= SATURATED:
            out.cacher_full_at.setdefault(kind, t)
        if in_window(t, s):
            out.cacher_hwm[kind] = max(value, out.cacher_hwm.get(kind, 0))


def forced_closes(chunk: bytes | bytearray, s: ScanSettings, out: Partial) -> None:
    for match, t in dated(p.FORCED_CLOSE, chunk, s):
        if in_window(t, s):
            kind = (
                (match.group(1) or match.group(2) or b"?").rstrip(b".").decode("utf-8", "replace")
            )
            out.forced_closes[kind] = out.forced_closes.get(kind, 0) + 1


def dispatches(chunk: bytes | bytearray, s: ScanSettings, out: Partial) -> None:
    for match, t in dated(p.DISPATCH, chunk, s, p.DISPATCH_LEADS):
        out.dispatches.append((int(match.group(1)), t))
