"""Scoring a growing log from where it stopped: each call costs only the new bytes.

The evaluator reads the apiserver's log during the warmup; rescanning it from the start
at every check would cost O(log size) each time. `IncrementalScore` keeps the byte
offset, the counts so far (a `Partial`, which merges exactly) and the unfinished last
line, and scans only what was appended. At any moment `scores()` equals `score_logs` of
the bytes fed so far (tests/logs/test_incremental.py checks it for random splits).

    inc = IncrementalScore(since=None, until=None)
    scores = inc.feed(path)        # reads path's new bytes; again later for more
    inc.update(new_bytes)          # or hand it the bytes yourself
    inc.offset                     # bytes consumed so far

A file that shrank (truncated) or was replaced (rotated: another inode) raises
LogRestarted: the bytes scored so far are no longer that file's. Call `reset()` to score
the new file from its start.
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

from bisector.logs.chunks import LineCutter, _read_after
from bisector.logs.definitions import RequestMetric
from bisector.logs.errors import LogError
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.records import MAX_LINE
from bisector.logs.scanner import scan_chunk
from bisector.logs.scores import Scores, build_scores
from bisector.logs.sources import GZIP_MAGIC

READ_SIZE = 16 << 20


class LogRestarted(LogError):
    """The growing log was truncated or rotated since the last read."""


class IncrementalScore:
    """The scores of a growing log, updated from the bytes appended since the last call."""

    def __init__(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        extra_metrics: dict[str, RequestMetric] | None = None,
        reference: date | None = None,
        max_line: int = MAX_LINE,
    ) -> None:
        self.since, self.until = since, until
        self._extra = tuple((extra_metrics or {}).values())
        self._reference = reference
        self._max_line = max_line
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next bytes are the start of a log."""
        self.offset = 0
        self._inode: tuple[int, int] | None = None
        self._part = Partial()
        self._cutter = LineCutter(self._max_line)
        self._settings: ScanSettings | None = None  # fixed once the first time is known
        if self._reference is not None:
            self._base = ScanSettings(self._reference, extra=self._extra, need_times=True)

    def feed(self, path: str | Path) -> Scores:
        """Read what was appended to `path` since the last call; the scores so far."""
        with Path(path).open("rb") as handle:
            stat = os.fstat(handle.fileno())
            inode = (stat.st_dev, stat.st_ino)
            if self._inode is not None and inode != self._inode:
                raise LogRestarted(
                    f"{path} was rotated (another file since byte {self.offset:,}): the "
                    "apiserver's log restarted; score the new file from its start"
                )
            if stat.st_size < self.offset:
                raise LogRestarted(
                    f"{path} was truncated ({stat.st_size:,} bytes, {self.offset:,} already "
                    "read): the log restarted; score it again from its start"
                )
            if self.offset == 0:
                if handle.read(2) == GZIP_MAGIC:
                    raise LogError(f"{path} is gzip: incremental scoring reads a growing plain log")
                handle.seek(0)
                if self._reference is None:
                    self._use_reference(datetime.fromtimestamp(stat.st_mtime, UTC).date())
            self._inode = inode
            handle.seek(self.offset)
            # Up to the size the file has now (bytes written meanwhile are the next
            # call's): a read buffer is zero-filled first, and a peek every few seconds
            # at a log of a few KiB must not fill 16 MiB twice to learn that.
            while self.offset < stat.st_size:
                want = min(READ_SIZE, stat.st_size - self.offset)
                buf = _read_after(handle, self._cutter.carry, want)
                got = len(buf) - 1 - len(self._cutter.carry)
                if not got:
                    break
                self.offset += got
                if (block := self._cutter.cut(buf)) is not None:
                    self._scan(block, self._part)
        return self.scores()

    def update(self, new_bytes: bytes | bytearray) -> None:
        """Add bytes that follow the ones given so far (any split: mid-line is fine)."""
        if not new_bytes:
            return
        if self._reference is None:
            self._use_reference(datetime.now(UTC).date())
        self.offset += len(new_bytes)
        piece = bytearray(b"\n")
        piece += new_bytes
        if (block := self._cutter.cut_after(piece)) is not None:
            self._scan(block, self._part)

    def scores(self) -> Scores:
        """Scores of everything fed so far, the unfinished last line included."""
        part = self._part
        pending = _pending_tail(self._cutter)
        if pending is not None:
            tail = Partial()
            self._scan(pending, tail, commit=False)
            part = _with_tail(part, tail)
        first = part.first_ts
        abs_since = None if self.since is None or first is None else first + self.since
        abs_until = None if self.until is None or first is None else first + self.until
        return build_scores(part, abs_since, abs_until, tuple(m.name for m in self._extra))

    def _use_reference(self, reference: date) -> None:
        self._reference = reference
        self._base = ScanSettings(reference, extra=self._extra, need_times=True)

    def _scan(self, block: bytearray, out: Partial, *, commit: bool = True) -> None:
        settings = self._settings
        if settings is None:
            first = self._part.first_ts
            if first is None:  # the window starts at the log's first time: find it first
                probe = Partial()
                scan_chunk(block, self._base, probe)
                first = probe.first_ts
            settings = self._base
            if first is not None:
                settings = replace(
                    self._base,
                    since=None if self.since is None else first + self.since,
                    until=None if self.until is None else first + self.until,
                )
                if commit:
                    self._settings = settings
        scan_chunk(block, settings, out)


def _pending_tail(cutter: LineCutter) -> bytearray | None:
    """The unfinished last line as a block, without consuming it."""
    saved = (cutter.carry, cutter.skipping)
    block = cutter.tail()
    cutter.carry, cutter.skipping = saved
    return block


def _with_tail(part: Partial, tail: Partial) -> Partial:
    """`part` followed by `tail`, leaving `part` as it was (its big lists copied only if
    the tail adds to them, which only a complete last line without newline can)."""
    combined = replace(
        part,
        cacher_hwm=dict(part.cacher_hwm),
        cacher_full_at=dict(part.cacher_full_at),
        forced_closes=dict(part.forced_closes),
        extra=dict(part.extra),
        write_times=copy.deepcopy(part.write_times) if len(tail.write_times) else part.write_times,
        dispatches=list(part.dispatches) if tail.dispatches else part.dispatches,
    )
    combined.merge(tail)
    return combined
