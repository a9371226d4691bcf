"""Builders for kube-apiserver log lines of every generation (formats from the reference)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

START = datetime(2017, 6, 2, 5, 51, 10)
UA_OLD = "kubelet/v1.7.0-beta.0.23+7043372d05510b (linux/amd64) kubernetes/7043372"
FORMATS = ("handlers", "wrap42", "wrap47", "v118", "v119", "v122", "json")


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def header(t: float, level: str = "I", where: str = "wrap.go:42") -> str:
    stamp = at(t)
    return f"{level}{stamp:%m%d %H:%M:%S.%f}       7 {where}] "


def request(fmt: str, t: float, verb: str, uri: str, status: int) -> str:
    """One request line (no newline) in format `fmt`."""
    if fmt == "handlers":
        return header(t, where="handlers.go:162") + (
            f"{verb} {uri}: (3.1ms) {status} [[{UA_OLD}] 10.240.0.5:34862]"
        )
    if fmt == "wrap42":
        return header(t) + f"{verb} {uri}: (3.1ms) {status} [[{UA_OLD}] 10.240.0.5:34862]"
    if fmt == "wrap47":
        return header(t, where="wrap.go:47") + (
            f"{verb} {uri}: (350.127µs) {status} [{UA_OLD} 10.240.0.5:34862]"
        )
    if fmt == "v118":
        return header(t, where="httplog.go:90") + (
            f'verb="{verb}" URI="{uri}" latency=3ms resp={status} UserAgent="{UA_OLD}" '
            'srcIP="10.240.0.5:34862": '
        )
    if fmt == "v119":
        return header(t, where="httplog.go:89") + (
            f'"HTTP" verb="{verb}" URI="{uri}" latency="6.487576ms" userAgent="{UA_OLD}" '
            f'srcIP="10.240.0.5:34862" resp={status}'
        )
    if fmt == "v122":
        return header(t, where="httplog.go:134") + (
            f'"HTTP" verb="{verb}" URI="{uri}" latency="6.487576ms" userAgent="{UA_OLD} resp=200" '
            'audit-ID="a28a438b-1" srcIP="172.18.0.5:39086" apf_pl="node-high" '
            'apf_fs="system-node-high" apf_iseats=1 apf_fseats=2 apf_additionalLatency="5ms" '
            f'apf_execution_time="5.956469ms" resp={status}'
        )
    if fmt == "json":
        epoch_ms = (at(t).replace(tzinfo=UTC).timestamp()) * 1000
        return json.dumps(
            {
                "ts": epoch_ms,
                "caller": "httplog/httplog.go:134",
                "msg": "HTTP",
                "v": 3,
                "verb": verb,
                "URI": uri,
                "latency": "6.4ms",
                "userAgent": UA_OLD,
                "audit-ID": "x",
                "srcIP": "10.0.0.1:1",
                "resp": status,
            },
            separators=(",", ":"),
        )
    raise ValueError(fmt)


def trap_5xx(fmt: str, t: float) -> list[str]:
    """A 500 with a stack trace and a `logging error output` line quoting a node PATCH 409."""
    quoted = request("wrap42", t, "PATCH", "/api/v1/nodes/n9/status", 409).replace('"', '\\"')
    if fmt == "json":  # JSON escapes newlines: the whole trace stays in one string
        return [request(fmt, t, "PATCH", "/api/v1/nodes/n9/status", 500)]
    first = request(fmt, t, "PATCH", "/api/v1/nodes/n9/status", 500)
    return [
        first,
        "goroutine 1 [running]:",
        "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/server/httplog.(*respLogger).recordStatus()",
        '\tPATCH /api/v1/nodes/n9/status: (1.0ms) 409 [[kubelet] 10.0.0.1:1] verb="PATCH" '
        'URI="/api/v1/nodes/n9" resp=409 ',
        f'logging error output: "{quoted}\\n"',
        f" [[{UA_OLD}] 10.240.0.5:34862]",
    ]


# (verb, uri, status) -> expected: 3 conflicts, 4 successful node writes.
MIX = [
    ("PATCH", "/api/v1/nodes/hollow-node-1/status", 409),
    ("PATCH", "/api/v1/nodes/hollow-node-2/status?timeout=10s", 409),
    ("PATCH", "/api/v1/nodes/hollow-node-3", 409),
    ("PATCH", "/api/v1/nodes/hollow-node-1/status", 200),
    ("GET", "/api/v1/nodes/hollow-node-1?resourceVersion=0", 200),
    ("POST", "/api/v1/nodes", 201),
    ("PUT", "/api/v1/nodes/hollow-node-4", 200),
    ("PATCH", "/api/v1/nodes/hollow-node-2/status", 200),
    ("PATCH", "/api/v1/namespaces/kubemark/pods/p1/status", 409),
    ("PATCH", "/api/v1/nodes/hollow-node-5/status", 404),
    ("PATCH", "/api/v1/nodes/hollow-node-5/proxy/x", 409),
    ("PUT", "/api/v1/nodesfoo/x", 200),
    ("PATCH", "/api/v1/nodes/hollow-node-6/status", 429),
]
MIX_CONFLICTS = 3
MIX_WRITES = 4


def mix_log(fmt: str, *, traps: bool = True, start: float = 0.0) -> list[str]:
    """The MIX one request per second, with a 5xx trap after the fifth."""
    lines: list[str] = []
    for i, (verb, uri, status) in enumerate(MIX):
        lines.append(request(fmt, start + i, verb, uri, status))
        if traps and i == 4:
            lines += trap_5xx(fmt, start + i + 0.5)
    return lines


def cri(lines: list[str], t: float = 0.0) -> list[str]:
    """Each physical line behind a container-runtime prefix, as kubelet writes them."""
    stamp = at(t).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
    return [f"{stamp} stderr F {line}" for line in lines]


def text(lines: list[str], newline: str = "\n") -> bytes:
    return "".join(line + newline for line in lines).encode()


# Cacher messages the scanner counts (each behind any glog header shape).
CACHER_MESSAGES = [
    b"cacher (*api.Node): 100 objects queued in incoming channel.",
    b"Forcing watcher close due to unresponsiveness: *api.Node",
    b"AAA: dispatching event nr 7",
    b"cacher (*api.Node): dispatched event nr 7",
    b"bisector: dispatched node event nr 7",
    b"dispatching event nr 7",
]
