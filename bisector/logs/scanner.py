"""One chunk of log text in, partial counts out; partials of consecutive chunks merge.

A chunk is whole lines (the last one may be a truncated tail at end of input)
and is scanned with compiled byte patterns that find only the lines that
matter, never decoding the rest. Counts respect the measured window; the
timestamps of all successful node writes are kept (8 bytes each) because the
dispatch lag pairs the Nth dispatch with the Nth write of the whole run.
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass

import numpy as np

from bisector.logs import cacher, glogscan
from bisector.logs import patterns as p
from bisector.logs.glogscan import GlogChunk
from bisector.logs.nodewrites import (
    Messages,
    cacher_lines,
    messages,
    node_writes,
    odd_cacher_lines,
    regex_writes,
)
from bisector.logs.partial import Partial, ScanSettings, in_window
from bisector.logs.records import ChunkLines, classify, edge_seconds
from bisector.logs.timestamps import cri_text_seconds, day_starts, glog_seconds, plausible

_NODE_URI = re.compile(p.NODE_URI_TEXT)
# Above one line in this many, the cacher handlers search the whole chunk (one copy of each
# such line costs more than the searches it saves).
_CACHER_SHARE = 8
_CRI_START = re.compile(p.CRI_STAMP + rb" \S+ [FP] ")
_PATTERNS = {
    (name, prefix_name): p.for_prefix(body, prefix)
    for name, body in (
        ("old_node", p.OLD_NODE_WRITE),
        ("new_node", p.NEW_NODE_WRITE),
        ("old_any", p.OLD_ANY_REQUEST),
        ("new_any", p.NEW_ANY_REQUEST),
        ("json", p.JSON_HTTP),
    )
    for prefix_name, prefix in (("plain", p.PLAIN), ("cri", p.CRI))
}


# Not a byte loop in Python: a block of garbled lines is all newlines once emptied.
_EMPTY_LINES = re.compile(rb"\n*")


def _prefix(chunk: bytes | bytearray) -> str:
    """The prefix: "cri" where the first line that is not empty has one, else "plain".

    Garbled lines (an over-long line's mark among them) are emptied before: a chunk that
    began with one was read as plain, every CRI line in it lost (a CRI log whose first
    line was blank or over-long scored no request at all, and a growing log's counts
    changed with where its reads were cut).
    """
    start = _EMPTY_LINES.match(chunk, 1)
    return "cri" if start and _CRI_START.match(chunk, start.end()) else "plain"


def scan_chunk(chunk: bytes | bytearray, s: ScanSettings, out: Partial) -> None:
    """Add the counts of `chunk` to `out`.

    `chunk` is b"\\n" then whole lines (the last may be a truncated tail at end of input):
    the leading newline lets every pattern anchor on line starts. Garbled lines (see
    records.py) are counted as unparsable and blanked before any pattern runs.
    """
    if len(chunk) <= 1:
        return
    undated = not (s.need_times or s.since is not None or s.until is not None)
    # The usual chunk (glog records and plain continuation lines) in one compiled pass;
    # any other, or without the compiled scan, decided with numpy below.
    glog = glogscan.scan(chunk, s.reference)
    if glog is not None and _scan_glog(chunk, glog, s, out, undated=undated):
        return
    lines = classify(chunk, s.reference)
    out.lines += lines.count
    out.unparsable += len(lines.garbled)
    if out.first_ts is None:
        out.first_ts = lines.first_ts
    if lines.last_ts is not None:
        out.last_ts = lines.last_ts
    raw, chunk = chunk, lines.cleaned(chunk)
    prefix = _prefix(chunk)
    # JSON request lines start a line, or follow a CRI prefix: no search of the chunk else.
    maybe_json = lines.has_json or prefix == "cri"
    json_rows = (
        _json_requests(chunk, prefix, out) if maybe_json and p.JSON_HTTP_MARK in chunk else []
    )
    # Where the message of each glog record starts: what the cacher handlers search is
    # those records' lines alone, dated or not (searching the whole chunk costs three
    # searches of 2 MiB, ~1 CPU-s per GiB, for the gate alone).
    msgs = messages(raw, lines) if prefix == "plain" and lines.glog.any() else None
    text = _cacher_text(raw, chunk, lines, msgs)
    marks = _CacherMarks.of(text)
    fast = undated and not marks.dispatch  # no write needs its time
    counted = fast and msgs is not None and _fast_node_writes(raw, lines, msgs, out)
    _the_rest(chunk, prefix, s, out, json_rows=json_rows, text=text, marks=marks, counted=counted)


def _scan_glog(
    chunk: bytes | bytearray, glog: GlogChunk, s: ScanSettings, out: Partial, *, undated: bool
) -> bool:
    """scan_chunk for a chunk the compiled scan read (no garbled line, no CRI or JSON
    record: the prefix is plain); False, with `out` untouched, where it cannot finish."""
    first = edge_seconds(chunk, glog.first_record, s.reference)
    last = edge_seconds(chunk, glog.last_record, s.reference)
    if first is None or last is None:  # a glog time that exists is always read: never seen
        return False
    out.lines += glog.count
    if out.first_ts is None:
        out.first_ts = first
    out.last_ts = last
    text = _glog_cacher_text(chunk, glog)
    marks = _CacherMarks.of(text)
    if undated and not marks.dispatch:
        counted = _count_glog_writes(chunk, glog, out)
    else:  # a window, or the dispatch lag (it pairs the Nth dispatch with the Nth write)
        counted = _count_dated_glog_writes(chunk, glog, s, out)
    _the_rest(chunk, "plain", s, out, json_rows=[], text=text, marks=marks, counted=counted)
    return True


@dataclass(frozen=True)
class _CacherMarks:
    """Whether the cacher handlers' text may hold a message they count, and a dispatch one.

    A gate for speed only, never for a count: a forced close or a dispatch line counts
    whatever file logged it, so its own mark opens the gate too. Gated on `cache` alone,
    such a line from wrap.go would count only where another line of the text said `cache`:
    the dated numpy path (the whole chunk) would count it, the compiled pass and the
    undated one (the messages' own lines) would not, and the count would change with where
    blocks are cut.
    """

    cacher: bool
    dispatch: bool

    @staticmethod
    def of(text: bytes | bytearray | None) -> _CacherMarks:
        if text is None:
            return _CacherMarks(False, False)
        dispatch = p.DISPATCH_MARK in text
        cacher = p.CACHER_FILES.search(text) is not None or dispatch or p.FORCED_CLOSE_MARK in text
        return _CacherMarks(cacher, dispatch)


def _the_rest(
    chunk: bytes | bytearray,
    prefix: str,
    s: ScanSettings,
    out: Partial,
    *,
    json_rows: list[tuple[float, str, str, int]],
    text: bytes | bytearray | None,
    marks: _CacherMarks,
    counted: bool,
) -> None:
    """Node writes by the regexes unless `counted`, any requests, the cacher messages."""
    if not counted:
        times, verbs, statuses = _node_writes(chunk, prefix, s, json_rows)
        _count_node_writes(times, verbs, statuses, s, out)
    if not out.has_requests or s.extra:
        _any_requests(chunk, prefix, s, out, json_rows)
    if text is None or not marks.cacher:
        return
    if p.CACHER_HWM_MARK in text:
        cacher.cacher_hwm(text, s, out)
    if p.FORCED_CLOSE_MARK in text:
        cacher.forced_closes(text, s, out)
    if marks.dispatch:
        cacher.dispatches(text, s, out)


def timed_node_writes(
    chunk: bytes | bytearray, s: ScanSettings
) -> tuple[np.ndarray, list[bytes], list[bytes]]:
    """Every node write of `chunk` with its time, verb and status, matched exactly as
    `scan_chunk` counts them (garbled lines blanked first): for series over time."""
    if len(chunk) <= 1:
        return np.empty(0), [], []
    lines = classify(chunk, s.reference)
    chunk = lines.cleaned(chunk)
    prefix = _prefix(chunk)
    maybe_json = lines.has_json or prefix == "cri"
    json_rows = (
        _json_requests(chunk, prefix, Partial()) if maybe_json and p.JSON_HTTP_MARK in chunk else []
    )
    return _node_writes(chunk, prefix, s, json_rows)


def _cacher_text(
    raw: bytes | bytearray, chunk: bytes | bytearray, lines: ChunkLines, msgs: Messages | None
) -> bytes | bytearray | None:
    """What the cacher handlers search: None where no line can hold a message they count.

    They count a message only where it starts (cacher.dated), so where every record is a
    glog line only the records whose message starts like one are handed over, as a led
    block of those whole lines: its searches read a few lines, not the chunk (three
    searches of 2 MiB per chunk where, as in a real log, such lines come every second).
    Otherwise, or when such lines are many, the whole (cleaned) chunk.
    """
    if msgs is None or lines.other_records:
        return chunk
    found = cacher_lines(raw, lines, msgs)
    if not len(found):
        return None
    if len(found) > max(1, lines.count // _CACHER_SHARE):
        return chunk
    return _lines_block(raw, lines.starts[found].tolist())  # glog records: never garbled


def _glog_cacher_text(chunk: bytes | bytearray, glog: GlogChunk) -> bytes | bytearray | None:
    """_cacher_text of a chunk the compiled scan read (every record a glog one)."""
    found = sorted(glog.cacher + odd_cacher_lines(chunk, glog.odd))
    if not found:
        return None
    if len(found) > max(1, glog.count // _CACHER_SHARE):
        return chunk
    return _lines_block(chunk, found)


def _lines_block(chunk: bytes | bytearray, starts: list[int]) -> bytes:
    """The whole lines starting at `starts`, led by a newline."""
    pieces: list[bytes | bytearray] = [b"\n"]
    for start in starts:
        end = chunk.find(b"\n", start)
        pieces.append(chunk[start : len(chunk) if end < 0 else end + 1])
    return b"".join(pieces)


def _count_glog_writes(chunk: bytes | bytearray, glog: GlogChunk, out: Partial) -> bool:
    """_fast_node_writes of a chunk the compiled scan read: its decided writes plus those
    the regex matches among the lines it could not decide."""
    extra = regex_writes(chunk, glog.undecided + glog.odd)
    if not glog.writes and not extra:
        return False
    conflicts = glog.conflicts + sum(w.conflict for w in extra)
    _add_undated(out, conflicts, glog.successes + sum(w.success for w in extra))
    return True


def _add_undated(out: Partial, conflicts: int, successes: int) -> None:
    """Writes counted without their times: the dispatch lag's index of the Nth write stays
    right, each of these times unknown (NaN)."""
    out.has_requests = True
    out.conflicts += conflicts
    out.node_writes += successes
    out.write_times.add_undated(successes)


def _count_dated_glog_writes(
    chunk: bytes | bytearray, glog: GlogChunk, s: ScanSettings, out: Partial
) -> bool:
    """_node_writes then _count_node_writes, for a chunk the compiled scan read with each
    write's time: the same writes (its decided ones and those the regex matches among the
    lines it left), in line order."""
    dated, extra = glog.dated, regex_writes(chunk, glog.undecided + glog.odd)
    if not len(dated.start) and not extra:
        return False
    times = dated.seconds + day_starts(dated.month_day, s.reference)
    conflict = (dated.kind & glogscan.CONFLICT) != 0
    success = (dated.kind & glogscan.SUCCESS) != 0
    if extra:
        extra_conflict, extra_success = _write_kinds(
            [w.verb for w in extra], [w.status for w in extra]
        )
        starts = np.concatenate([dated.start, np.array([w.start for w in extra], dtype=np.int64)])
        line_order = np.argsort(starts, kind="stable")
        times = np.concatenate([times, glog_seconds([w.stamp for w in extra], s.reference)])
        times = times[line_order]
        conflict = np.concatenate([conflict, extra_conflict])[line_order]
        success = np.concatenate([success, extra_success])[line_order]
    _count_kinds(times, conflict, success, s, out)
    return True


def _fast_node_writes(
    chunk: bytes | bytearray, lines: ChunkLines, msgs: Messages, out: Partial
) -> bool:
    """Counts without timestamps (none needed: no window, no dispatch lines in the chunk).

    The same lines as the anchored pattern of `_node_writes` (nodewrites.py). False when
    the chunk has no such node writes (the format may differ: the regexes decide).
    """
    found = node_writes(chunk, lines, msgs)
    if not len(found.line):
        return False
    _add_undated(out, int(found.conflict.sum()), int(found.success.sum()))
    return True


def _node_writes(
    chunk: bytes | bytearray,
    prefix: str,
    s: ScanSettings,
    json_rows: list[tuple[float, str, str, int]],
) -> tuple[np.ndarray, list[bytes], list[bytes]]:
    rows = _PATTERNS["old_node", prefix].findall(chunk)
    if not rows and p.NEW_FORMAT_MARK in chunk:
        rows += _PATTERNS["new_node", prefix].findall(chunk)
    times: np.ndarray
    if rows and prefix == "plain":
        stamps, verbs, statuses = (list(col) for col in zip(*rows, strict=True))
        times = glog_seconds(stamps, s.reference)
    elif rows:
        _, _, verbs, statuses = (list(col) for col in zip(*rows, strict=True))
        times = np.array([cri_text_seconds(row[0]) for row in rows])
    else:
        times, verbs, statuses = np.empty(0), [], []
    if not rows:
        for t, verb, uri, status in json_rows:
            if verb.encode() in (b"PATCH", b"POST", b"PUT", b"APPLY") and _NODE_URI.match(uri):
                times = np.append(times, t)
                verbs.append(verb.encode())
                statuses.append(str(status).encode())
    # In line order, as the log wrote them, even where a line was stamped a moment late:
    # sorted by time within each chunk, the Nth write (which the dispatch lag pairs with
    # the Nth dispatch) would change with where the chunks are cut.
    return times, verbs, statuses


def _write_kinds(verbs: list[bytes], statuses: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(conflict, success) of each write, by the status as written, as every path reads it
    (nodewrites.RegexWrite): a conflict is a PATCH or APPLY answered exactly `409`, a
    success a three-digit 2xx. Read as numbers, `0409` would count as a conflict only when
    the writes are dated (`score --since 0s` counting more than `score`), and a status
    longer than an int64 would end the scan in numpy's OverflowError."""
    column = np.array(statuses)  # fixed width, shorter ones padded with NULs
    width = column.dtype.itemsize
    if width < 3:
        none = np.zeros(len(statuses), dtype=bool)
        return none, none.copy()
    digits = column.view(np.uint8).reshape(len(statuses), width)
    three = digits[:, 2] != 0
    if width > 3:
        three &= digits[:, 3] == 0
    verb = np.array(verbs)
    conflict = three & (digits[:, 0] == 52) & (digits[:, 1] == 48) & (digits[:, 2] == 57)
    conflict &= (verb == b"PATCH") | (verb == b"APPLY")
    success: np.ndarray = three & (digits[:, 0] == 50)
    return conflict, success


def _count_node_writes(
    times: np.ndarray, verbs: list[bytes], statuses: list[bytes], s: ScanSettings, out: Partial
) -> None:
    if not len(times):
        return
    conflict, success = _write_kinds(verbs, statuses)
    _count_kinds(times, conflict, success, s, out)


def _count_kinds(
    times: np.ndarray, conflict: np.ndarray, success: np.ndarray, s: ScanSettings, out: Partial
) -> None:
    """Conflicts and successful writes inside the window; every successful write's time."""
    out.has_requests = True
    dated = np.isfinite(times)  # a line whose time cannot be read is never data
    if not dated.all():
        times, conflict, success = times[dated], conflict[dated], success[dated]
    window = np.ones(len(times), dtype=bool)
    if s.since is not None:
        window &= times >= s.since
    if s.until is not None:
        window &= times < s.until
    out.conflicts += int((conflict & window).sum())
    out.node_writes += int((success & window).sum())
    out.write_times.add(array("d", times[success].astype(np.float64).tobytes()))


def _json_requests(
    chunk: bytes | bytearray, prefix: str, out: Partial
) -> list[tuple[float, str, str, int]]:
    """Request entries of JSON logging; a line that does not parse into one is unparsable."""
    found = []
    for row in _PATTERNS["json", prefix].findall(chunk):
        line = row[-1] if isinstance(row, tuple) else row
        if (entry := _json_request(line)) is None:
            out.unparsable += 1
        else:
            found.append(entry)
    return found


def _json_request(line: bytes) -> tuple[float, str, str, int] | None:
    try:
        entry = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # invalid UTF-8 or JSON, nested too deep
        return None
    if not isinstance(entry, dict):
        return None
    ts, verb, uri, resp = (entry.get(k) for k in ("ts", "verb", "URI", "resp"))
    if not (
        isinstance(ts, int | float)
        and not isinstance(ts, bool)
        and plausible(ts / 1000.0)
        and isinstance(verb, str)
        and isinstance(uri, str)
        and isinstance(resp, int)
        and not isinstance(resp, bool)
        and 0 <= resp < 1000
    ):
        return None
    return ts / 1000.0, verb, uri, resp


def _any_requests(
    chunk: bytes | bytearray,
    prefix: str,
    s: ScanSettings,
    out: Partial,
    json_rows: list[tuple[float, str, str, int]],
) -> None:
    if not s.extra:
        out.has_requests |= bool(
            _PATTERNS["old_any", prefix].search(chunk)
            or (p.NEW_FORMAT_MARK in chunk and _PATTERNS["new_any", prefix].search(chunk))
            or json_rows
        )
        return
    rows: list[tuple[float, str, str, int]] = []
    for name in ("old_any", "new_any"):
        for row in _PATTERNS[name, prefix].findall(chunk):
            stamp = row[0]
            t = (
                float(glog_seconds([stamp], s.reference)[0])
                if prefix == "plain"
                else cri_text_seconds(stamp)
            )
            verb, uri, status = row[-3].decode(), row[-2].decode("utf-8", "replace"), row[-1]
            rows.append((t, verb, uri, int(status) if status.isdigit() else 0))
    rows += json_rows
    out.has_requests |= bool(rows)
    rows = [row for row in rows if plausible(row[0])]  # an unreadable time is never data
    for metric in s.extra:
        n = sum(
            1 for t, verb, uri, code in rows if in_window(t, s) and metric.matches(verb, uri, code)
        )
        out.extra[metric.name] = out.extra.get(metric.name, 0) + n
