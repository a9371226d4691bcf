"""Log timestamps as epoch seconds (UTC-naive: glog writes the master's local clock).

glog/klog headers (`I0602 05:51:10.000001`) carry no year. It comes from a
reference date (the file's mtime, or the object's update time): a month/day
later than the reference belongs to the previous year, which handles a run
that crosses Dec 31 (December lines in a file last written in January).
CRI prefixes (RFC 3339) and JSON `ts` (epoch ms) carry full dates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

import numpy as np

# Bytes of the glog time field captured by the scanners: b"0602 05:51:10.000001".
GLOG_FIELD_LEN = 20
_GLOG_LINE = re.compile(rb"[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) ")
_CRI_LINE = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d) \S+ [FP] ")
_JSON_TS = re.compile(rb'\{"ts":(\d+(?:\.\d+)?)')
_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
# Plausible log times: 1970 up to the end of year 9999. Anything else is a garbled line
# (an absurd JSON epoch, a year-0 CRI stamp), never a time to compute a window from.
MAX_EPOCH_S = 253402300800.0
_MICRO_WEIGHTS = np.array([100000, 10000, 1000, 100, 10, 1], dtype=np.int64)


@lru_cache(maxsize=4096)
def _day_start(month_day: int, reference: date) -> float:
    """Epoch seconds of 00:00 on MMDD in the year implied by `reference`."""
    month, day = divmod(month_day, 100)
    year = reference.year
    try:
        candidate = date(year, month, day)
        if candidate > reference + timedelta(days=1):
            candidate = date(year - 1, month, day)
    except ValueError:  # Feb 29 in a non-leap reference year, or garbage
        try:
            candidate = date(year - 1, month, day)
        except ValueError:
            return float("nan")
    return (datetime(candidate.year, candidate.month, candidate.day) - _EPOCH).total_seconds()


def glog_seconds(fields: Sequence[bytes], reference: date) -> np.ndarray:
    """Vectorised: many b"MMDD hh:mm:ss.uuuuuu" fields to epoch seconds (float64)."""
    if not fields:
        return np.empty(0)
    digits = np.frombuffer(b"".join(fields), dtype=np.uint8).reshape(-1, GLOG_FIELD_LEN)
    d = digits.astype(np.int64) - 48
    month_day = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    hours, minutes, secs = d[:, 5] * 10 + d[:, 6], d[:, 8] * 10 + d[:, 9], d[:, 11] * 10 + d[:, 12]
    micros = d[:, 14:20] @ _MICRO_WEIGHTS
    # Same operations, in the same order, as glog_field_seconds: bit-identical results.
    seconds = (hours * 3600 + minutes * 60 + secs).astype(np.float64) + micros / 1e6
    seconds[(hours > 23) | (minutes > 59) | (secs > 59)] = np.nan  # hour 25: garbled
    result: np.ndarray = seconds + day_starts(month_day, reference)
    return result


def day_starts(month_day: np.ndarray, reference: date) -> np.ndarray:
    """Epoch seconds of 00:00 of each MMDD (as the number MMDD) in the reference's year."""
    days = np.unique(month_day)
    starts = np.array([_day_start(int(md), reference) for md in days])
    found: np.ndarray = starts[np.searchsorted(days, month_day)]
    return found


def glog_field_seconds(field: bytes, reference: date) -> float:
    """One field (a line's time, dated one by one): no numpy call per line."""
    try:
        month_day, hours, minutes = int(field[0:4]), int(field[5:7]), int(field[8:10])
        secs, micros = int(field[11:13]), int(field[14:20])
    except ValueError:
        return float("nan")
    if hours > 23 or minutes > 59 or secs > 59:
        return float("nan")
    return (float(hours * 3600 + minutes * 60 + secs) + micros / 1e6) + _day_start(
        month_day, reference
    )


def plausible(seconds: float) -> bool:
    return 0.0 <= seconds < MAX_EPOCH_S  # False for NaN too


def cri_seconds(stamp: bytes, zone: bytes) -> float:
    """RFC 3339 with nanoseconds (more digits than fromisoformat takes) to epoch seconds.

    NaN for an impossible date (month 13, Feb 30, year 0, hour 25): a garbled line.
    """
    whole, _, frac = stamp.decode("ascii", "replace").partition(".")
    try:
        parsed = datetime.fromisoformat(
            whole + ("+00:00" if zone == b"Z" else zone.decode("ascii", "replace"))
        )
        seconds = (parsed - _EPOCH_UTC).total_seconds() + (float("0." + frac) if frac else 0.0)
    except (ValueError, OverflowError):
        return float("nan")
    return seconds if plausible(seconds) else float("nan")


def json_seconds(text: bytes) -> float:
    """A JSON `ts` (epoch milliseconds) in seconds; NaN when absurd (1e30, negative)."""
    try:
        seconds = float(text) / 1000.0
    except ValueError:
        return float("nan")
    return seconds if plausible(seconds) else float("nan")


def line_seconds(data: bytes | bytearray, start: int, reference: date) -> float | None:
    """Timestamp of the log line starting at `start`; None for a continuation line or a
    garbled one (an impossible time is never a time)."""
    seconds: float | None = None
    if match := _CRI_LINE.match(data, start):
        seconds = cri_seconds(match.group(1), match.group(2))
    elif match := _GLOG_LINE.match(data, start):
        seconds = glog_field_seconds(match.group(1), reference)
    elif match := _JSON_TS.match(data, start):
        seconds = json_seconds(match.group(1))
    return seconds if seconds is not None and plausible(seconds) else None


def iso(seconds: float) -> str:
    try:
        return (_EPOCH + timedelta(seconds=seconds)).isoformat(timespec="microseconds")
    except (ValueError, OverflowError):  # never reached with checked times; never a traceback
        return "invalid"


_CRI_STAMP = re.compile(rb"(.*?)(Z|[+-]\d\d:\d\d)$")


def cri_text_seconds(text: bytes) -> float:
    """b"2017-06-02T05:51:10.795286855Z" to epoch seconds."""
    match = _CRI_STAMP.match(text)
    if match is None:
        return float("nan")
    return cri_seconds(match.group(1), match.group(2))


def date_is_valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True
