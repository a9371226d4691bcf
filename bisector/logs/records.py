"""Which lines of a chunk start a log record, which continue one, and which are garbled.

Every line start is checked at once (numpy, fixed offsets) against the three record
headers: glog/klog `I0602 05:51:10.000001 `, a CRI prefix `2017-06-02T05:51:10`, and
JSON `{"ts":`. A line shaped like a header whose time is impossible (month 13, Feb 30,
hour 25, year 0, an absurd epoch) is *garbled*: counted as unparsable, blanked before any
pattern runs, so it is never data. So is a line that is no record and holds binary bytes
(control characters or invalid UTF-8), and the over-long-line marker the chunk readers
put in place of a line longer than MAX_LINE. Other lines are continuations (stack traces,
`logging error output`), legitimate text that no request pattern may count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from bisector.logs.timestamps import _day_start, date_is_valid, json_seconds, line_seconds

MAX_LINE = 1 << 20  # longer lines are skipped (their bytes never held) and counted garbled
OVERLONG_MARK = b"\x00"  # what the chunk readers leave in place of an over-long line

_WIDTH = 22  # `I0602 05:51:10.000001 ` and `2017-06-02T05:51:10` both fit
_DIGIT_AT_GLOG = [1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20]
_DIGIT_AT_CRI = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
_JSON_HEAD = np.frombuffer(b'{"ts":', dtype=np.uint8)
_JSON_TS = re.compile(rb'\{"ts":([^,}\s]*)')
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class ChunkLines:
    count: int = 0
    has_json: bool = False  # some line starts with `{"ts":` (JSON logging)
    first_ts: float | None = None
    last_ts: float | None = None
    garbled: list[tuple[int, int]] = field(default_factory=list)  # (start, end) byte ranges
    loose: list[tuple[int, int]] = field(default_factory=list)  # continuation lines

    def cleaned(self, chunk: bytes | bytearray) -> bytes | bytearray:
        """`chunk` with every garbled line emptied (its newline kept): never data."""
        if not self.garbled:
            return chunk
        pieces, pos = [], 0
        for start, end in self.garbled:
            pieces.append(chunk[pos:start])
            pos = end
        pieces.append(chunk[pos:])
        return bytearray().join(pieces)

    def loose_text(self, chunk: bytes | bytearray) -> bytes:
        return b"\n".join(bytes(chunk[start:end]) for start, end in self.loose)


def _is_binary(line: bytes | bytearray) -> bool:
    if _BINARY.search(line):
        return True
    if line.isascii():
        return False
    try:
        bytes(line).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def classify(chunk: bytes | bytearray, reference: date) -> ChunkLines:
    """Lines of `chunk` (b"\\n" then whole lines; the last may lack its newline)."""
    out = ChunkLines()
    size = len(chunk)
    if size <= 1:
        return out
    a = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(a == 10)
    starts = newlines + 1
    ends = np.append(newlines[1:], size)
    if starts[-1] >= size:  # the chunk ends with a newline: no line after it
        starts, ends = starts[:-1], ends[:-1]
    out.count = len(starts)
    if not out.count:
        return out
    # The first _WIDTH bytes of every line, one row each (a gather of rows, no index matrix).
    # Lines that start too near the end to hold a header read the chunk's last bytes: their
    # newline or length makes them fail every shape below.
    windows = np.lib.stride_tricks.sliding_window_view(a, _WIDTH) if size >= _WIDTH else None
    if windows is None:
        head = np.zeros((out.count, _WIDTH), dtype=np.uint8)
    else:
        head = windows[np.minimum(starts, size - _WIDTH)]
        short = (ends - starts) < _WIDTH
        if short.any():
            head[short] = 0  # shorter than any header: no record shape
    d = head - np.uint8(48)  # digits become 0..9, everything else wraps above 9
    digit = d <= 9
    first = head[:, 0]

    glog = (
        ((first == 73) | (first == 87) | (first == 69) | (first == 70))  # I W E F
        & digit[:, _DIGIT_AT_GLOG].all(axis=1)
        & (head[:, 5] == 32)
        & (head[:, 8] == 58)
        & (head[:, 11] == 58)
        & (head[:, 14] == 46)
        & (head[:, 21] == 32)
    )
    glog_ok = glog.copy()
    if glog.any():
        everywhere = bool(glog.all())  # the usual case: skip the row selection
        g = (d[:, :13] if everywhere else d[glog, :13]).astype(np.int32)
        month_day = g[:, 1] * 1000 + g[:, 2] * 100 + g[:, 3] * 10 + g[:, 4]
        valid = (g[:, 6] * 10 + g[:, 7] < 24) & (g[:, 9] * 10 + g[:, 10] < 60) & (g[:, 12] < 6)
        day_ok = np.zeros(10000, dtype=bool)  # by MMDD; a run spans few days: no sort needed
        for md in np.flatnonzero(np.bincount(month_day, minlength=10000)):
            day_ok[md] = not np.isnan(_day_start(int(md), reference))
        valid &= day_ok[month_day]
        if everywhere:
            glog_ok = valid
        else:
            glog_ok[glog] = valid

    # A line cannot have two shapes: only lines that are not glog are tried as CRI or JSON.
    cri = np.zeros(out.count, dtype=bool)
    json = np.zeros(out.count, dtype=bool)
    if (other := ~glog).any():
        cri[other] = (
            digit[other][:, _DIGIT_AT_CRI].all(axis=1)
            & (head[other, 4] == 45)
            & (head[other, 7] == 45)
            & (head[other, 10] == 84)
            & (head[other, 13] == 58)
            & (head[other, 16] == 58)
        )
        json[other] = (head[other, :6] == _JSON_HEAD).all(axis=1)
    cri_ok = cri.copy()
    if cri.any():
        c = d[cri].astype(np.int32)
        year = c[:, 0] * 1000 + c[:, 1] * 100 + c[:, 2] * 10 + c[:, 3]
        month, day = c[:, 5] * 10 + c[:, 6], c[:, 8] * 10 + c[:, 9]
        valid = (year >= 1970) & (c[:, 11] * 10 + c[:, 12] < 24) & (c[:, 14] < 6) & (c[:, 17] < 6)
        ymd = year * 10000 + month * 100 + day
        dates = np.unique(ymd)
        date_ok = np.array([date_is_valid(v // 10000, v // 100 % 100, v % 100) for v in dates])
        valid &= date_ok[np.searchsorted(dates, ymd)]
        cri_ok[cri] = valid

    json_ok = json.copy()
    out.has_json = bool(json.any())
    for i in np.flatnonzero(json):
        match = _JSON_TS.match(chunk, int(starts[i]))
        json_ok[i] = match is not None and not np.isnan(json_seconds(match.group(1)))

    record = glog_ok | cri_ok | json_ok
    garbled = (glog | cri | json) & ~record
    if record.all():
        out.first_ts, out.last_ts = _edges(chunk, starts, reference)
        return out
    for i in np.flatnonzero(~record & ~garbled):
        start, end = int(starts[i]), int(ends[i])
        if _is_binary(chunk[start:end]):  # also the over-long-line marker
            garbled[i] = True
        else:
            out.loose.append((start, end))
    out.garbled = [(int(starts[i]), int(ends[i])) for i in np.flatnonzero(garbled)]
    out.first_ts, out.last_ts = _edges(chunk, starts[record], reference)
    return out


def _edges(
    chunk: bytes | bytearray, record_starts: np.ndarray, reference: date
) -> tuple[float | None, float | None]:
    first = last = None
    for start in record_starts:
        if (first := line_seconds(chunk, int(start), reference)) is not None:
            break
    for start in record_starts[::-1]:
        if (last := line_seconds(chunk, int(start), reference)) is not None:
            break
    return first, last
