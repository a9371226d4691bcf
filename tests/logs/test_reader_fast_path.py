"""The fast path (counts without dates) gives exactly what a line-by-line reference gives.

The reference below reads a 2017-style log one line at a time with the plainest code:
a line counts when it starts with a glog header whose date and time exist, and its
message is a node write `VERB /api/v1/nodes...: (latency) STATUS ` followed by whitespace
(hyperhq/kubernetes at 7043372, staging/src/k8s.io/apiserver/pkg/server/httplog/log.go
line 163: `"%s %s: (%v) %v%v%v [%s %s]"`, method, URI, latency, status, then the status
stack or ` [user-agent addr]`; logged with InfoDepth(1) from pkg/server/filters/wrap.go,
hence the `wrap.go:42]` header). Seeded fuzz mixes real lines with the traps the scanner must not
count: stack traces and `logging error output` lines quoting a node PATCH 409, impossible
times, binary noise, over-long lines, truncated last lines. Scored whole, in small chunks,
in parallel byte ranges, and with every write dated (the slow path): all equal.
"""

from __future__ import annotations

import random
import re
from datetime import date, datetime
from pathlib import Path

import pytest

from bisector.logs import Scores, score_logs
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.reader import _scan_range
from bisector.logs.scores import build_scores
from tests.helpers.log_fuzz import fuzz_log

_REF_HEADER = re.compile(rb"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.\d{6} +\d+ [^\]]*\] ")
_REF_WRITE = re.compile(
    rb"(PATCH|POST|PUT) /api/v1/nodes(?:/[^/?\s:]+(?:/status)?)?(?:\?\S*)?: \([^)]*\) (\d+)\s"
)
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _valid_time(match: re.Match[bytes]) -> bool:
    month, day, hour, minute, second = (int(g) for g in match.groups())
    try:
        datetime(2017, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def reference(data: bytes) -> tuple[int, int, int, int]:
    """(conflicts, node writes, lines, unparsable lines), one line at a time."""
    conflicts = writes = unparsable = 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for k, line in enumerate(lines):
        last = k == len(lines) - 1 and not data.endswith(b"\n")
        if len(line) > 1 << 20:
            unparsable += 1
            continue
        head = _REF_HEADER.match(line)
        shaped = re.match(rb"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} ", line)
        if shaped and (head is None or not _valid_time(head)):
            unparsable += 1
            continue
        if head is None:
            unparsable += bool(_BINARY.search(line)) or not _utf8(line)
            continue
        body = line[head.end() :] + (b"" if last else b"\n")
        if write := _REF_WRITE.match(body):
            verb, status = write.groups()
            conflicts += verb == b"PATCH" and status == b"409"
            writes += len(status) == 3 and status.startswith(b"2")
    return conflicts, writes, len(lines), unparsable


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("seed", range(12))
def test_fast_path_equals_the_line_by_line_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    data = fuzz_log(rng, rng.randrange(50, 600))
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(data)
    conflicts, writes, lines, unparsable = reference(data)
    expected = (conflicts or None, writes or None, lines, unparsable)
    runs = {
        "whole": score_logs([path], workers=1),
        "small chunks": score_logs([path], workers=1, chunk_size=rng.choice([61, 700, 5000])),
        "parallel": score_logs([path], workers=2),
        "dated (slow path)": _dated(path),
        "parallel ranges": _ranges(path, pieces=rng.randrange(2, 9)),
    }
    for name, scores in runs.items():
        m = scores.metrics
        got = (m["conflicts"] or None, m["node_writes"] or None, m["lines"], m["unparsable_lines"])
        assert got == expected, name


def _settings() -> ScanSettings:
    return ScanSettings(reference=date.today())


def _dated(path: Path) -> Scores:
    part = Partial()
    size = path.stat().st_size
    part.merge(
        _scan_range((str(path), 0, size, 1 << 16, ScanSettings(date.today(), need_times=True)))
    )
    return build_scores(part, None, None, ())


def _ranges(path: Path, pieces: int) -> Scores:
    size = path.stat().st_size
    step = -(-size // pieces)
    total = Partial()
    for start in range(0, size, step):
        total.merge(_scan_range((str(path), start, min(size, start + step), 1 << 15, _settings())))
    return build_scores(total, None, None, ())
