"""Lines that are a node PATCH 409, or look like one, garbled: each must be an unparsable
line to the scorer, never data."""

from __future__ import annotations

import json
import random

TAIL = "wrap.go:42] PATCH /api/v1/nodes/n2/status: (3.1ms) 409 [[kubelet] 10.0.0.1:1]"


def _json_line(ts: object, **extra: object) -> bytes:
    doc = {"ts": ts, "msg": "HTTP", "verb": "PATCH", "URI": "/api/v1/nodes/n/status"}
    return json.dumps({**doc, "resp": 409, **extra}).encode()


# Each is a node PATCH 409 (or looks like one) that must not be counted.
GARBLED: dict[str, bytes] = {
    "glog month 13": f"I1302 05:51:10.000001       7 {TAIL}".encode(),
    "glog Feb 30": f"I0230 05:51:10.000001       7 {TAIL}".encode(),
    "glog hour 25": f"I0602 25:51:10.000001       7 {TAIL}".encode(),
    "glog minute 61": f"W0602 05:61:10.000001       7 {TAIL}".encode(),
    "cri year 0": f"0000-06-02T05:51:10.000001Z stderr F I0602 05:51:10.000001 7 {TAIL}".encode(),
    "cri month 13": f"2017-13-02T05:51:10.1Z stderr F I0602 05:51:10.000001 7 {TAIL}".encode(),
    "json absurd epoch": _json_line(10**25),
    "json negative epoch": _json_line(-5),
    "json epoch as text": b'{"ts":"soon","msg":"HTTP","verb":"PATCH","resp":409}',
    "json nested 100k deep": (
        b'{"ts":1496382670000,"msg":"HTTP","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    ),
    "json cut short": _json_line(1496382670000)[:-9],
    "json resp not a number": _json_line(1496382670000, resp="409"),
    "binary garbage": bytes(random.Random(7).randrange(256) for _ in range(300)).replace(
        b"\n", b"."
    ),
    "invalid utf-8": b"\xff\xfe PATCH /api/v1/nodes/n/status: (1ms) 409 \xc3\x28 ",
}
