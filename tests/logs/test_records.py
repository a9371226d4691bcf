"""Line classification reads every header at once (words of 8 bytes); each line's verdict
equals the one-line-at-a-time reading of its time (timestamps.glog_field_seconds)."""

from __future__ import annotations

import math
import random
import re
from datetime import date

import numpy as np
import pytest

from bisector.logs.records import classify, rows_at, word_at
from bisector.logs.timestamps import glog_field_seconds

_SHAPE = re.compile(rb"[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) ")


def _stamp(rng: random.Random) -> bytes:
    """A glog time field, often impossible (month 13, Feb 29/30, hour 24, minute 60)."""
    if rng.random() < 0.5:
        month, day = rng.choice([(6, 2), (2, 28), (12, 31), (1, 1), (2, 29)])
        stamp = f"{month:02d}{day:02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:"
        return f"{stamp}{rng.randrange(60):02d}.{rng.randrange(10**6):06d}".encode()
    month = rng.choice([1, 2, 2, 4, 6, 12, 0, 13, 19, 99])
    day = rng.choice([1, 28, 29, 29, 30, 31, 0, 32, 99])
    hour, minute, second = (
        rng.choice([0, 9, 23, 24, 29, 99]),
        rng.choice([0, 59, 60]),
        rng.choice([0, 59, 60, 99]),
    )
    stamp = f"{month:02d}{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
    return f"{stamp}.{rng.randrange(10**6):06d}".encode()


def _line(rng: random.Random) -> bytes:
    line = rng.choice(b"IWEFXi").to_bytes(1, "big") + _stamp(rng) + b"       7 wrap.go:42] x"
    if rng.random() < 0.2:  # damage one byte of the header, or cut the line short
        at = rng.randrange(22)
        line = line[:at] + rng.choice([b" ", b"a", b":", b".", b"\x00", b"5"]) + line[at + 1 :]
    if rng.random() < 0.1:
        line = line[: rng.randrange(23)]
    return line


@pytest.mark.parametrize("reference", [date(2017, 6, 3), date(2016, 3, 1), date(2017, 1, 2)])
def test_glog_records_equal_the_scalar_reading(reference: date) -> None:
    rng = random.Random(reference.toordinal())
    lines = [_line(rng) for _ in range(3000)]
    chunk = b"\n" + b"\n".join(lines) + rng.choice([b"\n", b""])
    got = classify(chunk, reference)
    expected = []
    for line in lines:
        shape = _SHAPE.match(line)
        expected.append(
            shape is not None and not math.isnan(glog_field_seconds(shape.group(1), reference))
        )
    assert got.glog.tolist() == expected
    assert 300 < sum(expected) < 2900  # both verdicts are exercised
    garbled = {chunk[start:end] for start, end in got.garbled}
    shaped_but_impossible = {
        line for line, ok in zip(lines, expected, strict=True) if not ok and _SHAPE.match(line)
    }
    assert shaped_but_impossible <= garbled


@pytest.mark.parametrize("width", [8, 24, 48, 64])
def test_windows_hold_the_bytes_at_each_position_and_zeros_past_the_end(width: int) -> None:
    """rows_at / word_at (one opaque item gathered per position) against plain slicing,
    every position of a buffer, inside only and up to its end."""
    rng = random.Random(width)
    data = bytes(rng.randrange(256) for _ in range(3 * width + 5))
    a = np.frombuffer(data, dtype=np.uint8)
    for end in (len(data) - width + 1, len(data) + 1):
        positions = np.array(rng.sample(range(end), end), dtype=np.int64)  # any order
        starts = positions.tolist()
        want = [data[p : p + width].ljust(width, b"\0") for p in starts]
        assert [bytes(row) for row in rows_at(a, positions, width)] == want
        words = [int.from_bytes(data[p : p + 8].ljust(8, b"\0"), "little") for p in starts]
        assert word_at(a, positions).tolist() == words
