"""Incremental scoring: fed in any split, the scores equal scoring the whole log at once."""

from __future__ import annotations

import gzip
import itertools
import os
import random
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from bisector.logs import (
    IncrementalScore,
    LogError,
    LogRestarted,
    Scores,
    chunks,
    scanner,
    score_logs,
)
from bisector.logs import incremental as incremental_module
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.records import MAX_LINE
from tests.helpers.garbled_lines import GARBLED
from tests.helpers.log_lines import FORMATS, cri, header, mix_log, request, text

REFERENCE = date(2017, 6, 3)
MTIME = datetime(2017, 6, 3, 12, tzinfo=UTC).timestamp()


def _log(rng: random.Random) -> bytes:
    """A format, cacher and dispatch lines, garbled lines, maybe an over-long line."""
    fmt = rng.choice(FORMATS)
    lines = mix_log(fmt, start=0)
    t = 20.0
    for k in range(rng.randrange(20, 200)):
        t += rng.random() * 3
        status = rng.choice([200, 409])
        lines.append(request(fmt, t, "PATCH", f"/api/v1/nodes/n{k}/status", status))
        if rng.random() < 0.1:
            lines.append(
                header(t, where="cacher.go:566")
                + f"cacher (*api.Node): {rng.randrange(120)} objects queued in incoming channel."
            )
        if rng.random() < 0.1:
            lines.append(
                header(t, level="E", where="cacher.go:610")
                + f"AAA: dispatching event nr {rng.randrange(1, k + 2)}"
            )
        if rng.random() < 0.05:
            lines.append(
                header(t, where="cacher.go:300")
                + "Forcing watcher close due to unresponsiveness: *api.Node"
            )
    if rng.random() < 0.3:
        lines = cri(lines, 0)
    pieces = text(lines).split(b"\n")
    for _ in range(rng.randrange(0, 4)):
        pieces.insert(rng.randrange(len(pieces)), rng.choice(sorted(GARBLED.values())))
    if rng.random() < 0.15:
        pieces.insert(rng.randrange(len(pieces)), b"q" * (MAX_LINE + 100))
    data = b"\n".join(pieces)
    return data if rng.random() < 0.5 else data.rstrip(b"\n")  # maybe no final newline


def _splits(rng: random.Random, data: bytes) -> list[bytes]:
    n = min(len(data) - 1, rng.randrange(1, 40))
    edges = [0, *sorted(rng.sample(range(1, len(data)), n)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def _same(got: Scores, expected: Scores) -> None:
    assert got.metrics == expected.metrics
    assert got.seen == expected.seen
    assert got.window == expected.window
    assert got.unparsable_lines == expected.unparsable_lines


@pytest.mark.parametrize("seed", range(40))
def test_random_splits_score_exactly_like_the_whole_log(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    data = _log(rng)
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(data)
    os.utime(path, (MTIME, MTIME))
    since = rng.choice([None, None, 5.0, 30.0])
    until = rng.choice([None, None, 60.0])
    expected = score_logs([path], since=since, until=until, chunk_size=rng.choice([97, 1 << 20]))
    inc = IncrementalScore(since=since, until=until, reference=REFERENCE)
    for piece in _splits(rng, data):
        inc.update(piece)
        inc.scores()  # asking mid-way changes nothing
    _same(inc.scores(), expected)
    assert inc.offset == len(data)


def test_feed_reads_only_the_new_bytes_of_a_growing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1)
    data = _log(rng)
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(b"")
    scanned: list[int] = []
    real_scan = scanner.scan_chunk

    def counting_scan(block: bytes | bytearray, settings: ScanSettings, out: Partial) -> None:
        scanned.append(len(block))
        real_scan(block, settings, out)

    monkeypatch.setattr(incremental_module, "scan_chunk", counting_scan)
    inc = IncrementalScore(reference=REFERENCE)
    for piece in _splits(rng, data):
        with path.open("ab") as handle:
            handle.write(piece)
        inc.feed(path)
    os.utime(path, (MTIME, MTIME))
    _same(inc.scores(), score_logs([path]))
    # Each byte is scanned about once (blocks add a leading newline; the first block that
    # holds a time is probed once for it; the pending last line is re-read per call).
    assert sum(scanned) <= 2 * len(data) + 64 * len(scanned)


def test_a_peek_at_a_small_log_asks_for_no_more_than_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read buffer is zero-filled before the read: asking for READ_SIZE (16 MiB) at
    each peek of a log of a few KiB, and again to see its end, cost more CPU than the
    whole scan (a run peeking every few seconds spent a fifth of its CPU there)."""
    rng = random.Random(2)
    data = _log(rng)
    path = tmp_path / "kube-apiserver.log"
    asked: list[int] = []
    real_read = chunks._read_after

    def recording_read(stream: Any, head: bytes | bytearray, size: int) -> bytearray:
        asked.append(size)
        return real_read(stream, head, size)

    monkeypatch.setattr(incremental_module, "_read_after", recording_read)
    inc = IncrementalScore(reference=REFERENCE)
    half = len(data) // 2
    path.write_bytes(data[:half])
    inc.feed(path)
    inc.feed(path)  # nothing new: nothing read
    with path.open("ab") as handle:
        handle.write(data[half:])
    inc.feed(path)
    assert asked == [half, len(data) - half]
    os.utime(path, (MTIME, MTIME))
    _same(inc.scores(), score_logs([path]))


def test_truncated_or_rotated_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(mix_log("wrap42")))
    inc = IncrementalScore(reference=REFERENCE)
    assert inc.feed(path).metrics["conflicts"] == 3
    path.write_bytes(text(mix_log("wrap42"))[:100])  # same inode, shorter: truncated
    with pytest.raises(LogRestarted, match="truncated"):
        inc.feed(path)
    inc.reset()
    path.unlink()
    path.write_bytes(text(mix_log("wrap42")) * 2)  # a new file under the same name
    other = tmp_path / "keep"  # keep the old inode from being reused at once
    other.write_bytes(b"x")
    inc.feed(path)
    rotated = tmp_path / "kube-apiserver.log.1"
    path.rename(rotated)
    path.write_bytes(text(mix_log("wrap42")) * 3)
    with pytest.raises(LogRestarted, match="rotated"):
        inc.feed(path)


def test_gzip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log.gz"
    path.write_bytes(gzip.compress(text(mix_log("wrap42"))))
    with pytest.raises(LogError, match="gzip"):
        IncrementalScore().feed(path)


@pytest.mark.parametrize(
    "lead",
    [b"\n", b"\x00garbled\n", b"q" * (MAX_LINE + 1) + b"\n"],
    ids=["blank", "garbled", "long"],
)
def test_a_cri_block_led_by_a_garbled_line_keeps_its_requests(tmp_path: Path, lead: bytes) -> None:
    """The scanner read a block as CRI only if its first line was: a block led by a blank,
    garbled or over-long line (the first of a file, or one a read ended just before)
    counted none of its CRI requests, so score_logs of such a log said no conflicts and
    a growing log's counts changed with where its reads were cut."""
    lines = mix_log("wrap42", start=0)
    for k in range(30):
        lines.append(request("wrap42", 20.0 + k, "PATCH", f"/api/v1/nodes/n{k}/status", 409))
    body = text(cri(lines, 0))
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(body)
    os.utime(path, (MTIME, MTIME))
    conflicts = score_logs([path]).metrics["conflicts"]
    path.write_bytes(lead + body)
    os.utime(path, (MTIME, MTIME))
    whole = score_logs([path])
    assert whole.metrics["conflicts"] == conflicts
    inc = IncrementalScore(reference=REFERENCE)
    inc.update(lead)
    inc.update(body)  # a block led by the lead's line
    _same(inc.scores(), whole)


def test_a_window_after_a_long_untimed_head_is_kept(tmp_path: Path) -> None:
    """score_logs learns a file's first time from its first 64 KiB; past it, the window
    starts at the first time read, probed in the first 64 KiB of each block only: a
    first time further into its block was read without the window, and since/until were
    then ignored for the whole log (any first time between 64 KiB and 2 MiB, before the
    reads grew from 64 KiB; still some after)."""
    lines = mix_log("wrap42", start=0)
    for k in range(300):
        status = 409 if k % 3 else 200
        lines.append(request("wrap42", 20.0 + k / 2, "PATCH", f"/api/v1/nodes/n{k}/status", status))
    head = b"".join(b"untimed head line %06d %s\n" % (k, b"." * 40) for k in range(150 * 16))
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(head + text(lines))
    os.utime(path, (MTIME, MTIME))
    inc = IncrementalScore(since=30.0, until=100.0)
    expected = inc.feed(path)
    counted = expected.metrics["conflicts"]
    assert isinstance(counted, int | float) and 0 < counted < 200  # some, not all 200
    _same(score_logs([path], since=30.0, until=100.0), expected)
