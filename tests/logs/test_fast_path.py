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
from bisector.logs.metrics import build_scores
from bisector.logs.partial import Partial, ScanSettings
from bisector.logs.reader import _scan_range
from tests.helpers.log_lines import UA_OLD, header

_REF_HEADER = re.compile(rb"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.\d{6} +\d+ [^\]]*\] ")
_REF_WRITE = re.compile(
    rb"(PATCH|POST|PUT) /api/v1/nodes(?:/[^/?\s:]+(?:/status)?)?(?:\?\S*)?: \([^)]*\) (\d+)\s"
)
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
URIS = [
    "/api/v1/nodes/hollow-node-7/status",
    "/api/v1/nodes/hollow-node-7",
    "/api/v1/nodes",
    "/api/v1/nodes/hollow-node-7/status?timeout=10s",
    "/api/v1/nodes/hollow-node-7/proxy/logs",
    "/api/v1/nodesfoo/x",
    "/api/v1/namespaces/kubemark/pods/p-1/status",
]


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


def fuzz_log(rng: random.Random, n: int) -> bytes:
    out: list[bytes] = []
    t = 0.0
    for _ in range(n):
        t += rng.random()
        pick = rng.random()
        if pick < 0.75:
            verb = rng.choice(["PATCH", "PATCH", "GET", "POST", "PUT"])
            status = rng.choice([200, 200, 201, 409, 409, 429, 404, 500])
            where = rng.choice(["wrap.go:42", "handlers.go:162"])
            out.append(
                (
                    header(t, where=where)
                    + f"{verb} {rng.choice(URIS)}: ({rng.randrange(1, 900)}.1µs) {status} "
                    f"[[{UA_OLD}] 10.240.0.5:34862]"
                ).encode()
            )
        elif pick < 0.85:  # a 5xx trace quoting a node PATCH 409
            quoted = header(t) + "PATCH /api/v1/nodes/n9/status: (1.0ms) 409 [[kubelet] 1:1]"
            out += [
                (header(t) + "PATCH /api/v1/nodes/n9/status: (30s) 504").encode(),
                b"goroutine 1 [running]:",
                b"\tPATCH /api/v1/nodes/n9/status: (1.0ms) 409 [[kubelet] 10.0.0.1:1]",
                f'logging error output: "{quoted}\\n"'.encode(),
            ]
        elif pick < 0.92:  # an impossible time on a real-looking conflict
            stamp = rng.choice(["1302 05:51:10", "0230 05:51:10", "0602 25:00:00", "0602 05:60:00"])
            out.append(
                f"I{stamp}.000001       7 wrap.go:42] PATCH /api/v1/nodes/x/status: "
                f"(1ms) 409 [[k] 1:1]".encode()
            )
        elif pick < 0.98:
            out.append(
                bytes(rng.randrange(256) for _ in range(rng.randrange(80))).replace(b"\n", b"")
            )
        else:
            out.append(b"w" * ((1 << 20) + rng.randrange(1, 5)))
    data = b"\n".join(out)
    return data + b"\n" if rng.random() < 0.7 else data


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
