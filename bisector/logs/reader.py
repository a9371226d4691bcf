"""Reading a run's log files in time order, in large chunks, on every core for big plain files."""

from __future__ import annotations

import ctypes
import math
import multiprocessing
import os
import signal
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO

from bisector.errors import BisectorError
from bisector.logs.chunks import iter_chunks, range_chunks
from bisector.logs.definitions import RequestMetric
from bisector.logs.errors import LogError
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.scanner import scan_chunk
from bisector.logs.scores import Scores, build_scores
from bisector.logs.sources import Source, open_source, resolve
from bisector.logs.timestamps import line_seconds

# 2 MiB: the scanner's passes over a block (newlines, header words, windows of bytes at each
# line) then mostly hit the core's cache; 16 MiB blocks measured ~25% more CPU.
CHUNK_SIZE = 2 << 20
# Below this a plain file is read in-process: starting workers costs more than it saves.
PARALLEL_MIN_BYTES = 64 << 20
# A plain file is cut into byte ranges of at most this much (and at least four per
# worker), handed to the workers as they finish: the last range leaves a core idle for
# at most its own scan, ~0.05 s of CPU here where 128 MiB ranges (four per worker on 1 GiB)
# left up to 0.2 s; a range's own cost (open, seek, one Partial returned) is well under 1 ms.
RANGE_BYTES = 32 << 20
_PEEK_BYTES = 1 << 16
# Lines out of order by this much are one log's: glog stamps a line before it takes the
# write lock, so a goroutine descheduled in between writes it late. Real 2017 apiserver
# logs (kubernetes 7043372, procs, 100 hollow nodes, 2 cores at load ~7) have 7-34 lines
# 1.0-1.6 s behind the line above them: without the slack a rotation there begins "before
# the last file ended" and a real rotated set is refused. Two launches' logs overlap by minutes.
ORDER_SLACK_S = 5.0
# A source with no size (stdin, a URL) may never end (`yes |`, `tail -f`, `< /dev/zero`):
# the most it may give, far past one run's apiserver log (a file of any size still reads:
# it has an end) ...
MAX_STREAM_BYTES = 64 << 30
# ... and the most it may give before its first line with a readable time (a glog file's
# header is four lines): past it, it is no log at all, and said so in seconds, not hours.
MAX_HEAD_WITHOUT_TIME = 64 << 20
# ... or lines (short ones, `yes`: 32 million of them in 64 MiB, minutes of scanning).
MAX_LINES_WITHOUT_TIME = 1_000_000


class _Bounded:
    """An unsized source's stream, read up to the bounds above; LogError past either."""

    def __init__(self, spec: str, inner: IO[bytes], seen: Partial) -> None:
        self._spec, self._inner, self._seen = spec, inner, seen
        self.given = 0

    def readinto(self, buffer: memoryview) -> int:
        n: int = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        self.given += n
        name = "stdin (-)" if self._spec == "-" else self._spec
        # `seen` is filled a block behind the reads: the head bound is far past a block.
        lines = self._seen.lines
        if self._seen.first_ts is None and (
            self.given > MAX_HEAD_WITHOUT_TIME or lines > MAX_LINES_WITHOUT_TIME
        ):
            many = lines > MAX_LINES_WITHOUT_TIME
            what = f"{MAX_LINES_WITHOUT_TIME:,} lines" if many else _size(MAX_HEAD_WITHOUT_TIME)
            raise LogError(
                f"{name} gave more than {what} without one log line with a "
                "readable time: not a kube-apiserver log (an endless input such as `yes` or "
                "/dev/zero?); pass the apiserver's log"
            )
        if self.given > MAX_STREAM_BYTES:
            raise LogError(
                f"{name} gave more than {_size(MAX_STREAM_BYTES)}: more than any one run's "
                "apiserver log (an endless input such as `tail -f`?); save the log to a file "
                "and pass the file"
            )
        return n


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


def _bounded(source: Source, stream: IO[bytes], seen: Partial) -> IO[bytes]:
    """`stream` itself for a file (its size bounds it), else `stream` under _Bounded."""
    if source.is_local_file or source.spec.startswith("gs://"):
        return stream
    return _Bounded(source.spec, stream, seen)  # type: ignore[return-value]


def _start_worker() -> None:
    """Workers leave Ctrl-C to the parent and die quietly when the pool ends them.

    Forked workers inherit the run loop's SIGTERM handler, which raises
    KeyboardInterrupt; `Pool.terminate` sends SIGTERM, so each worker printed a traceback.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_memory()


# mallopt(3) parameters of glibc.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Let glibc keep the blocks this process frees instead of returning them to the kernel.

    Each chunk allocates and frees a few MiB (the block, numpy temporaries); by default
    glibc hands them back and the next chunk faults in fresh zeroed pages: ~35,000 page
    faults and ~20% of a worker's CPU per 256 MiB of log (measured). Only for the short-lived
    scan workers: what they keep is bounded by their own peak, and freed when they exit.
    False where the C library is not glibc (nothing changed).
    """
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return False
        libc = ctypes.CDLL(None)
        return bool(
            libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(_M_TRIM_THRESHOLD, 256 << 20)
        )
    except (AttributeError, OSError, ValueError):
        return False


def _scan_range(task: tuple[str, int, int, int, ScanSettings]) -> Partial:
    path, start, end, chunk_size, settings = task
    out = Partial()
    for body in range_chunks(path, start, end, chunk_size):
        scan_chunk(body, settings, out)
    return out


def _scan_stream(source: Source, settings: ScanSettings, chunk_size: int) -> Partial:
    out = Partial()
    with open_source(source) as stream:
        # A binary file is read through (memory stays bounded) and then refused: no line
        # with a readable time, its garbled lines counted in the message.
        for body in iter_chunks(_bounded(source, stream, out), chunk_size):
            scan_chunk(body, settings, out)
    return out


def first_timestamp(source: Source) -> float | None:
    """Time of the first line, read from the head of the source only."""
    with open_source(source) as stream:
        head = b"\n" + stream.read(_PEEK_BYTES)
    start = 1
    while 0 < start < len(head):
        if (t := line_seconds(head, start, source.mtime.date())) is not None:
            return t
        start = head.find(b"\n", start) + 1
    return None


def order_sources(specs: Sequence[str | Path]) -> list[tuple[Source, float | None]]:
    """A rotated set in time order: first timestamp, then the rotation suffix, then argv order."""
    sources = [resolve(spec) for spec in specs]
    if len(sources) > 1 and any(src.spec == "-" for src in sources):
        raise BisectorError("stdin (-) cannot be combined with other logs; pass files instead")
    if len(sources) == 1 and sources[0].spec == "-":
        return [(sources[0], None)]
    stamped = [(src, first_timestamp(src)) for src in sources]
    keyed = sorted(
        enumerate(stamped),
        key=lambda item: (
            item[1][1] if item[1][1] is not None else float("-inf"),
            item[1][0].rotation_age(),
            item[0],
        ),
    )
    return [pair for _, pair in keyed]


def score_logs(
    sources: Sequence[str | Path],
    *,
    since: float | None = None,
    until: float | None = None,
    extra_metrics: dict[str, RequestMetric] | None = None,
    chunk_size: int = CHUNK_SIZE,
    workers: int | None = None,
) -> Scores:
    """Metrics of one run whose log is the files `sources` (in any order).

    `since`/`until` are seconds after the run's first log line; counts outside are ignored.
    """
    if not sources:
        raise BisectorError("no log given; pass at least one log file, URL or -")
    ordered = order_sources(sources)
    t0 = next((t for _, t in ordered if t is not None), None)
    extra = tuple((extra_metrics or {}).values())
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
    base = ScanSettings(reference=ordered[0][0].mtime.date(), extra=extra)
    total = _scan_all(
        ordered, base, since=since, until=until, t0=t0, chunk_size=chunk_size, n_workers=n_workers
    )
    if _undated_dispatch_writes(total) and all(src.spec != "-" for src, _ in ordered):
        # Dispatch lines far from the writes they pair with: read again, dating every write.
        base = replace(base, need_times=True)
        total = _scan_all(
            ordered,
            base,
            since=since,
            until=until,
            t0=t0,
            chunk_size=chunk_size,
            n_workers=n_workers,
        )
    if total.lines and total.first_ts is None:
        garbled = f", {total.unparsable} of {total.lines} lines garbled" if total.unparsable else ""
        raise LogError(
            f"{ordered[0][0].spec} is not a kube-apiserver log (no glog/klog, CRI or JSON "
            f"log lines with a readable time{garbled}); pass the apiserver's log file(s)"
        )
    abs_since = None if since is None or total.first_ts is None else total.first_ts + since
    abs_until = None if until is None or total.first_ts is None else total.first_ts + until
    return build_scores(total, abs_since, abs_until, tuple(m.name for m in extra))


def _undated_dispatch_writes(part: Partial) -> bool:
    writes = part.write_times
    return any(0 < nr <= len(writes) and math.isnan(writes[nr - 1]) for nr, _ in part.dispatches)


def _scan_all(
    ordered: list[tuple[Source, float | None]],
    base: ScanSettings,
    *,
    since: float | None,
    until: float | None,
    t0: float | None,
    chunk_size: int,
    n_workers: int,
) -> Partial:
    total = Partial()
    lazy_window = t0 is None and (since is not None or until is not None)
    for source, _ in ordered:
        settings = replace(
            base,
            reference=source.mtime.date(),
            since=None if since is None or t0 is None else t0 + since,
            until=None if until is None or t0 is None else t0 + until,
        )
        if lazy_window:  # stdin: the window starts at the first line read
            part = _scan_stdin_window(source, settings, since, until, chunk_size)
        else:
            part = _scan_source(source, settings, chunk_size, n_workers)
        _check_order(source, part, total)
        total.merge(part)
    return total


def _check_order(source: Source, part: Partial, before: Partial) -> None:
    """LogError when `part` (one file, scanned) runs backwards in time, or begins before the
    files before it end: two launches' logs in one file (`cat new.log old.log`) or a
    reversed one (their window would read 0 s and still be judged), the same file given
    twice (its counts doubled: `score a.log a.log` would read 2x the conflicts) or two
    launches' logs in one set. Only the ends are compared, so the scan's hot path is
    untouched; lines a goroutine wrote a moment late are allowed."""
    first, last = part.first_ts, part.last_ts
    if first is not None and last is not None and last < first - ORDER_SLACK_S:
        raise LogError(
            f"{source.spec}: its times run backwards ({last - first:+.0f}s from its first "
            "line to its last): logs of two launches, or not one log in order; pass one "
            "launch's log"
        )
    if first is not None and before.last_ts is not None and first < before.last_ts - ORDER_SLACK_S:
        raise LogError(
            f"{source.spec} begins {before.last_ts - first:.0f}s before the log read before it "
            "ends: the same log given twice, or logs of two launches; pass one launch's "
            "rotated set, each file once"
        )


def _scan_stdin_window(
    source: Source,
    settings: ScanSettings,
    since: float | None,
    until: float | None,
    chunk_size: int,
) -> Partial:
    out = Partial()
    with open_source(source) as stream:
        for body in iter_chunks(_bounded(source, stream, out), chunk_size):
            if out.first_ts is None:
                probe = Partial()
                scan_chunk(body[:_PEEK_BYTES], settings, probe)
                if probe.first_ts is None and len(body) > _PEEK_BYTES:
                    # The first time lies further in: scanned without the window, this
                    # block set first_ts and no later block was ever windowed.
                    scan_chunk(body, settings, probe)
                if probe.first_ts is not None:
                    settings = replace(
                        settings,
                        since=None if since is None else probe.first_ts + since,
                        until=None if until is None else probe.first_ts + until,
                    )
            scan_chunk(body, settings, out)
    return out


def _scan_source(source: Source, settings: ScanSettings, chunk_size: int, workers: int) -> Partial:
    if not source.is_local_file or workers < 2:
        return _scan_stream(source, settings, chunk_size)
    size = Path(source.spec).stat().st_size
    with Path(source.spec).open("rb") as handle:
        is_gzip = handle.read(2) == b"\x1f\x8b"
    # gzip: isal inflates in its own thread while this process scans. Shipping inflated
    # blocks to worker processes measured slower (pickling 16 MiB blocks through pipes).
    if is_gzip or size < PARALLEL_MIN_BYTES:
        return _scan_stream(source, settings, chunk_size)
    pieces = max(workers * 4, -(-size // RANGE_BYTES))
    step = -(-size // pieces)
    tasks = [
        (source.spec, start, min(size, start + step), chunk_size, settings)
        for start in range(0, size, step)
    ]
    with multiprocessing.get_context("fork").Pool(workers, _start_worker) as pool:
        parts = pool.map(_scan_range, tasks, chunksize=1)
    total = Partial()
    for part in parts:
        total.merge(part)
    return total
