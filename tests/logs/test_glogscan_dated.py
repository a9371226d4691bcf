"""The compiled pass's writes one by one (`GlogChunk.dated`) against the numpy path.

Since 3ea492d the compiled pass also reads the chunks that ask for each write's time
(--since/--until, the dispatch lag, the evaluator); before, numpy read all of them. Each
test scores the same bytes both ways (the compiled module taken away for the second).
"""

from __future__ import annotations

import random
from datetime import date

import numpy as np
import pytest

from bisector.logs import glogscan
from bisector.logs.partial import Partial, ScanSettings
from tests.helpers.both_scanners import scan_once

REFERENCE = date(2017, 6, 3)
HEAD = b"I0602 05:51:10.000001       7 "

needs_compiled = pytest.mark.skipif(
    not glogscan.available(), reason="the C extension is not built (no compiler at install)"
)


@needs_compiled
@pytest.mark.parametrize("need_times", [False, True])
def test_a_cacher_message_counts_whatever_else_the_chunk_holds(
    need_times: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forced close and a dispatch line logged from a file not named cache*, beside a
    request whose URI says `cache`: the dated numpy path searched the whole chunk, whose
    `cache` opened the cacher gate (1 forced close), the compiled pass only the messages'
    own lines (none; the lines are few among many, so the
    handlers get them as a block): score --since counted what score did not, and the count changed
    with where a block was cut."""
    chunk = (
        b"\n"
        + b"\n".join(
            [
                HEAD + b"wrap.go:42] GET /api/v1/namespaces/x/configmaps/cache: (1ms) 200 x",
                *[HEAD + b"wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 200 x"] * 20,
                HEAD + b"wrap.go:42] Forcing watcher close due to unresponsiveness: *api.Node",
                HEAD + b"wrap.go:42] AAA: dispatching event nr 1",
            ]
        )
        + b"\n"
    )
    s = ScanSettings(REFERENCE, need_times=need_times)
    for compiled in (True, False):
        out = scan_once(chunk, s, monkeypatch, compiled=compiled)
        assert out.forced_closes == {"*api.Node": 1}, compiled
        assert [nr for nr, _ in out.dispatches] == [1], compiled


def _times(part: Partial) -> np.ndarray:
    return np.array([part.write_times[i] for i in range(len(part.write_times))])


def _request_line(rng: random.Random, month_day: bytes, seconds: float) -> bytes:
    """A node write at `seconds` of day `month_day`; one in four in a shape only the regex
    decides (an unpadded pid, a query string, a four-digit status)."""
    h, rest = divmod(int(seconds * 1e6), 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    s, us = divmod(rest, 1_000_000)
    pid, query, status = b"      7", b"", rng.choice([b"409", b"200", b"201", b"500"])
    match rng.randrange(8):
        case 0:
            pid = b"7"
        case 1:
            query = b"?timeout=10s"
        case 2:
            status = rng.choice([b"0409", b"0200"])
    return b"I%s %02d:%02d:%02d.%06d %s wrap.go:42] PATCH /api/v1/nodes/n/status%s: (1ms) %s x" % (
        month_day,
        h,
        m,
        s,
        us,
        pid,
        query,
        status,
    )


@needs_compiled
@pytest.mark.parametrize(
    ("reference", "days"),
    [
        (date(2017, 1, 1), [b"1231", b"0101"]),  # the year turns inside the chunk
        (date(2016, 3, 1), [b"0228", b"0229", b"0301"]),  # a leap day
    ],
)
def test_each_write_time_is_numpys_across_days_and_late_lines(
    reference: date, days: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_times element by element (the dispatch lag pairs the Nth dispatch with the
    Nth write) for 3,000 writes (the compiled buffers grow past 1024), lines written up to
    3 s late, the regex's writes among the compiled pass's, and a window cutting them."""
    rng = random.Random(1)
    lines, t = [], 86_000.0
    for day in days:
        for _ in range(3000 // len(days)):
            t = (t + rng.uniform(0, 0.2)) % 86_400
            late = max(0.0, t - rng.uniform(0, 3)) if rng.random() < 0.1 else t
            lines.append(_request_line(rng, day, late))
    chunk = b"\n" + b"\n".join(lines) + b"\n"
    found = glogscan.scan(chunk, reference)
    assert found is not None and found.undecided
    assert len(found.dated.start) > 1024
    probe = scan_once(chunk, ScanSettings(reference), monkeypatch, compiled=False)
    assert probe.first_ts is not None and probe.last_ts is not None
    middle = (probe.first_ts + probe.last_ts) / 2
    for s in (
        ScanSettings(reference, need_times=True),
        ScanSettings(reference, since=middle - 600, until=middle + 600),
    ):
        compiled = scan_once(chunk, s, monkeypatch, compiled=True)
        numpy_only = scan_once(chunk, s, monkeypatch, compiled=False)
        assert (compiled.conflicts, compiled.node_writes) == (
            numpy_only.conflicts,
            numpy_only.node_writes,
        )
        assert len(compiled.write_times) > 100
        assert np.array_equal(_times(compiled), _times(numpy_only), equal_nan=True)
