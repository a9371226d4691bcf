"""Seeded random kube-apiserver logs for the scanners' equivalence tests.

`fuzz_log`: 2017-style lines mixed with the traps the scanner must not count (stack
traces and `logging error output` lines quoting a node PATCH 409, impossible times,
binary noise, over-long lines, a truncated last line); tests/logs/test_reader_fast_path.py
scores it against a line-by-line reference. `fuzz_chunk`: node-write lines built from
pieces that match the pattern only in part (tests/logs/test_nodewrites.py checks each
against the anchored regex).
"""

from __future__ import annotations

import random

from bisector.logs.nodewrites import HEAD_SPAN, TAIL_SPAN, URI_SPAN
from tests.helpers.log_lines import UA_OLD, header

URIS = [
    "/api/v1/nodes/hollow-node-7/status",
    "/api/v1/nodes/hollow-node-7",
    "/api/v1/nodes",
    "/api/v1/nodes/hollow-node-7/status?timeout=10s",
    "/api/v1/nodes/hollow-node-7/proxy/logs",
    "/api/v1/nodesfoo/x",
    "/api/v1/namespaces/kubemark/pods/p-1/status",
]


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


def _pick(rng: random.Random, options: list[bytes]) -> bytes:
    """The first option (the pattern's own piece) most of the time, else any other."""
    return options[0] if rng.random() < 0.8 else rng.choice(options[1:])


def _name(rng: random.Random) -> bytes:
    longest = URI_SPAN - 15  # `/api/v1/nodes/`, the name, the byte after it
    length = rng.choice([0, 1, 5, 13, 16, longest - 1, longest, longest + 1, longest + 9])
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789-._~!%"
    return bytes(rng.choice(alphabet) for _ in range(length))


def _header(rng: random.Random) -> bytes:
    time = rng.choice([b"0602 05:51:10.000001", b"0602 23:59:59.999999", b"1231 00:00:00.000000"])
    pid = _pick(
        rng,
        [
            *(b"      7", b"  12345", b"1234567", b"12345678", b"7", b"", b"   7 ", b" 7  7"),
            *(b"   x7", b"       "),  # the last: seven spaces, no digit
        ],
    )
    where = _pick(
        rng,
        [
            b"wrap.go:42",
            b"handlers.go:162",
            b"x" * (HEAD_SPAN - 10),
            b"y" * (HEAD_SPAN + 5),
            b"z" * (HEAD_SPAN - 10),  # behind a seven-column pid: `]` the window's last byte
            b"z" * (HEAD_SPAN - 9),  # and the first byte past it
            b"a]b",
            b"",
        ],
    )
    close = _pick(rng, [b"] ", b"]", b"]x ", b"]] "])
    return rng.choice([b"I", b"W", b"E", b"F"]) + time + b" " + pid + b" " + where + close


def _uri(rng: random.Random) -> bytes:
    base = _pick(rng, [b"/api/v1/nodes", b"/api/v1/node", b"/api/v1/nodesfoo"])
    named = b"/" + _name(rng) if rng.random() < 0.8 else b""
    tail = rng.choice([b"", b"/status", b"/status", b"/statusx", b"/proxy/logs", b"/"])
    query = _pick(rng, [b"", b"?timeout=10s", b"?a=b:c", b"?", b"?x y", b"?" + b"q" * 120])
    return base + named + tail + query


def _request(rng: random.Random) -> bytes:
    verb = rng.choice([b"PATCH", b"PATCH", b"POST", b"PUT", b"APPLY", b"GET", b"PATCHX", b"A"])
    sep = _pick(rng, [b": (", b":(", b" (", b": "])
    longest = TAIL_SPAN - 11  # after `/status: (`, before the `)` that must be in the window
    latency = _pick(
        rng,
        [b"3.1ms", b"350.127\xc2\xb5s", b"", b"30s", *(b"1" * n for n in (longest, longest + 1))],
    )
    close = _pick(rng, [b") ", b")", b" "])
    status = rng.choice([b"200", b"201", b"409", b"409", b"429", b"500", b"4", b"40", b"4090",
                         b"20000", b"0409", b"hijacked", b""])  # fmt: skip
    after = _pick(rng, [b" [[kubelet] 1:1]", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"", b"x", b"0"])
    return verb + b" " + _uri(rng) + sep + latency + close + status + after


def fuzz_chunk(rng: random.Random, n: int) -> bytes:
    lines = []
    for _ in range(n):
        line = _header(rng) + _request(rng)
        if rng.random() < 0.05:
            line = line[: rng.randrange(len(line) + 1)]  # cut anywhere
        lines.append(line)
    body = b"\n".join(lines)
    return b"\n" + (body + b"\n" if rng.random() < 0.5 else body)
