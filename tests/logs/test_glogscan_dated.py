"""The compiled pass with dates asked (`scan(..., dated=True)`) against the numpy path.

Since 3ea492d the compiled pass also reads the chunks that ask for each write's time
(--since/--until, the dispatch lag, the evaluator); before, numpy read all of them. Each
test scores the same bytes both ways (the compiled module taken away for the second).
"""

from __future__ import annotations

from datetime import date

import pytest

from bisector.logs import glogscan
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.scanner import scan_chunk

REFERENCE = date(2017, 6, 3)
HEAD = b"I0602 05:51:10.000001       7 "

needs_compiled = pytest.mark.skipif(
    not glogscan.available(), reason="the C extension is not built (no compiler at install)"
)


def _scan(
    chunk: bytes, s: ScanSettings, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> Partial:
    out = Partial()
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(glogscan, "_compiled", None)
        scan_chunk(bytearray(chunk), s, out)
    return out


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
        out = _scan(chunk, s, monkeypatch, compiled)
        assert out.forced_closes == {"*api.Node": 1}, compiled
        assert [nr for nr, _ in out.dispatches] == [1], compiled
