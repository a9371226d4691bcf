"""handlers.go/wrap.go node writes (the dense lines of a 2017 log) matched in compiled code.

`old_node_writes` gives, line for line, what matching `patterns.OLD_NODE_WRITE` at
every line start gives, in one pass over the bytes: a loop compiled by numba walks
each line once (glog header, `file:line] `, verb, `/api/v1/nodes` URI, `: (latency)`,
status, the whitespace after it). Python's `re` needs a match object's worth of work
per line; a kubemark log is ~40 % node writes, so that work, not the scanning, was the
floor (measured ~4x less CPU per GiB with this loop, newline counting included).

numba costs ~1 s to import, so it is loaded only for inputs large enough to repay it
(`reader` decides); without numba the regex path in scanner.py gives the same counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from bisector.logs.timestamps import day_starts

VERBS = (b"PATCH", b"POST", b"PUT", b"APPLY")
CONFLICT_VERBS = (0, 3)  # PATCH and APPLY answered 409 are conflicts
_MAX_STATUS_DIGITS = 9


@dataclass
class NodeWrites:
    """Matched lines in line order: time (epoch s), verb (index into VERBS), status."""

    times: np.ndarray
    verbs: np.ndarray
    statuses: np.ndarray


def _is_space(c: int) -> bool:  # what `\s` matches in a bytes pattern
    return c == 32 or 9 <= c <= 13


def _is_digit(c: int) -> bool:
    return 48 <= c <= 57


def _header_end(a: np.ndarray, s: int, e: int) -> int:
    """Offset after `[IWEF]MMDD hh:mm:ss.uuuuuu +PID [^]]*] `, or -1."""
    if e - s < 22:
        return -1
    c = a[s]
    if c != 73 and c != 87 and c != 69 and c != 70:  # noqa: PLR1714 (numba: no set literal)
        return -1
    for k in (1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20):
        if not _is_digit(a[s + k]):
            return -1
    if a[s + 5] != 32 or a[s + 8] != 58 or a[s + 11] != 58 or a[s + 14] != 46:
        return -1
    if a[s + 21] != 32:
        return -1
    j = s + 21
    while j < e and a[j] == 32:
        j += 1
    k = j
    while k < e and _is_digit(a[k]):
        k += 1
    if k == j or k >= e or a[k] != 32:
        return -1
    k += 1
    while k < e and a[k] != 93:  # the first `]` closes `file:line`
        k += 1
    if k + 1 >= e or a[k + 1] != 32:
        return -1
    return k + 2


def _literal_at(a: np.ndarray, at: int, e: int, lit: np.ndarray) -> bool:
    if at + len(lit) > e:
        return False
    for k in range(len(lit)):  # noqa: SIM110 (a plain loop compiles to the tightest code)
        if a[at + k] != lit[k]:
            return False
    return True


def _uri_end(a: np.ndarray, u: int, e: int) -> int:
    """After `/api/v1/nodes`: the offset of `(` when `(?:/name(?:/status)?)?(?:\\?\\S*)?: (`
    follows, else -1."""
    f = u
    while f < e and not _is_space(a[f]):
        f += 1
    # The URI holds no whitespace, so `: (` must be the first whitespace and its neighbours.
    if f == u or f + 1 >= e or a[f - 1] != 58 or a[f] != 32 or a[f + 1] != 40:
        return -1
    q = u
    while q < f - 1 and a[q] != 63:  # the path part ends at the first `?`
        q += 1
    if q == u:
        return f + 1
    if a[u] != 47:
        return -1
    slashes = 0
    for k in range(u + 1, q):
        if a[k] == 58:
            return -1
        if a[k] == 47:
            slashes += 1
    if slashes == 0:
        return f + 1 if q - u >= 2 else -1
    if slashes == 1 and q - u >= 9 and a[q - 7] == 47:
        for k, c in enumerate((115, 116, 97, 116, 117, 115)):  # status
            if a[q - 6 + k] != c:
                return -1
        return f + 1
    return -1


def _scan(a: np.ndarray, lits: tuple[np.ndarray, ...], nodes: np.ndarray) -> tuple[Any, ...]:
    """Per matched line: start, verb, status, month*100+day, seconds of the day.

    Also the newline count and the starts of lines to hand to the regex (a status
    of more than 9 digits).
    """
    n = len(a)
    cap = 1024
    starts = np.empty(cap, np.int64)
    verbs = np.empty(cap, np.int8)
    statuses = np.empty(cap, np.int64)
    undecided = np.empty(16, np.int64)
    found = 0
    odd = 0
    newlines = 0
    s = 0
    while s < n:
        e = s
        while e < n and a[e] != 10:
            e += 1
        if e < n:
            newlines += 1
        msg = _header_end(a, s, e) if s < e else -1
        verb = -1
        if msg >= 0:
            for v in range(len(lits)):
                if _literal_at(a, msg, e, lits[v]):
                    verb = v
                    break
        if verb >= 0:
            u = msg + len(lits[verb])
            paren = _uri_end(a, u + len(nodes), e) if _literal_at(a, u, e, nodes) else -1
            c = paren + 1
            while paren >= 0 and c < e and a[c] != 41:  # `)` ends the latency
                c += 1
            if paren >= 0 and c + 1 < e and a[c + 1] == 32:
                d = c + 2
                value = 0
                while d < e and _is_digit(a[d]) and d - c - 2 <= _MAX_STATUS_DIGITS:
                    value = value * 10 + (a[d] - 48)
                    d += 1
                digits = d - c - 2
                # `\d+(?=\s)`: a whitespace after, or the newline (absent on a truncated line)
                ends_well = (d < e and _is_space(a[d])) or (d == e and e < n)
                if digits > _MAX_STATUS_DIGITS:
                    if odd == len(undecided):
                        undecided = np.concatenate((undecided, np.empty(odd, np.int64)))
                    undecided[odd] = s
                    odd += 1
                elif digits > 0 and ends_well:
                    if found == len(starts):
                        starts = np.concatenate((starts, np.empty(found, np.int64)))
                        verbs = np.concatenate((verbs, np.empty(found, np.int8)))
                        statuses = np.concatenate((statuses, np.empty(found, np.int64)))
                    starts[found] = s
                    verbs[found] = verb
                    statuses[found] = value
                    found += 1
        s = e + 1
    return starts[:found], verbs[:found], statuses[:found], undecided[:odd], newlines


def _fields(a: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Month*100+day and seconds of the day of the glog headers at `starts`."""
    month_day = np.empty(len(starts), np.int64)
    seconds = np.empty(len(starts), np.float64)
    for i in range(len(starts)):
        f = starts[i] + 1  # b"MMDD hh:mm:ss.uuuuuu"
        month_day[i] = (
            (a[f] - 48) * 1000 + (a[f + 1] - 48) * 100 + (a[f + 2] - 48) * 10 + (a[f + 3] - 48)
        )
        whole = (
            ((a[f + 5] - 48) * 10 + (a[f + 6] - 48)) * 3600
            + ((a[f + 8] - 48) * 10 + (a[f + 9] - 48)) * 60
            + (a[f + 11] - 48) * 10
            + (a[f + 12] - 48)
        )
        frac = (
            (a[f + 14] - 48) * 1e-1
            + (a[f + 15] - 48) * 1e-2
            + (a[f + 16] - 48) * 1e-3
            + (a[f + 17] - 48) * 1e-4
            + (a[f + 18] - 48) * 1e-5
            + (a[f + 19] - 48) * 1e-6
        )
        seconds[i] = float(whole) + frac
    return month_day, seconds


_compiled: dict[str, Callable[..., Any]] = {}
_LITS = tuple(np.frombuffer(v + b" ", dtype=np.uint8) for v in VERBS)
_NODES = np.frombuffer(b"/api/v1/nodes", dtype=np.uint8)


def available() -> bool:
    """Whether numba can be imported (the compiled loop is then used for large inputs)."""
    if "scan" in _compiled:
        return True
    try:
        import numba
    except ImportError:
        return False
    options: dict[str, Any] = {"cache": True, "nogil": True}
    for helper in (_is_space, _is_digit, _header_end, _literal_at, _uri_end):
        globals()[helper.__name__] = numba.njit(**options)(helper)
    _compiled["scan"] = numba.njit(**options)(_scan)
    _compiled["fields"] = numba.njit(**options)(_fields)
    return True


def warm_up() -> bool:
    """Load (or compile) the loop now, before worker processes fork; False without numba."""
    if not available():
        return False
    probe = np.frombuffer(
        b"\nI0602 05:51:00.000000       7 wrap.go:42] GET /: (1ms) 200\n", np.uint8
    )
    _compiled["fields"](probe, _compiled["scan"](probe, _LITS, _NODES)[0])
    return True


def old_node_writes(
    chunk: bytes | bytearray, reference: date, regex: Callable[[int], tuple[bytes, bytes, bytes]]
) -> tuple[NodeWrites, int]:
    """Node writes of `chunk` (b"\\n" then lines) and its newline count.

    `regex(start)` matches the pattern at a line start, for the rare lines the loop
    leaves to it; it returns (time field, verb, status) or raises LookupError.
    """
    a = np.frombuffer(chunk, dtype=np.uint8)
    starts, verbs, statuses, undecided, newlines = _compiled["scan"](a, _LITS, _NODES)
    month_day, seconds = _compiled["fields"](a, starts)
    times = seconds + day_starts(month_day, reference)
    rows = NodeWrites(times, verbs.astype(np.int64), statuses)
    if len(undecided):
        rows = _merge(a, starts, rows, undecided, regex=regex, reference=reference)
    return rows, int(newlines)


def _merge(
    a: np.ndarray,
    starts: np.ndarray,
    rows: NodeWrites,
    undecided: np.ndarray,
    *,
    regex: Callable[[int], tuple[bytes, bytes, bytes]],
    reference: date,
) -> NodeWrites:
    """Add the lines the regex matches among `undecided`, keeping line order."""
    found = []
    for start in undecided.tolist():
        try:
            found.append((start, *regex(start)))
        except LookupError:
            continue
    if not found:
        return rows
    extra = np.array([row[0] for row in found], dtype=np.int64)
    month_day, seconds = _compiled["fields"](a, extra)
    order = np.argsort(np.concatenate([starts, extra]), kind="stable")
    return NodeWrites(
        np.concatenate([rows.times, seconds + day_starts(month_day, reference)])[order],
        np.concatenate([rows.verbs, [VERBS.index(row[2]) for row in found]])[order],
        np.concatenate([rows.statuses, [int(row[3]) for row in found]])[order],
    )
