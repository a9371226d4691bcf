"""Who talks to the simulated apiserver: per-node request-line pieces and background traffic.

Request lines follow the v1.7 `wrap.go:42` shape:
`VERB URI: (LATENCY) STATUS [[USER-AGENT] IP:PORT]`. Per-node prefixes and tails
are built once so the hot loop only glues strings.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bisector.sim.glog import go_duration

Stamp = Callable[[float], str]


def node_name(i: int) -> str:
    return f"hollow-node-{i}"


class NodeStrings:
    """Prefixes and tails of the request lines each hollow node's clients produce."""

    def __init__(self, nodes: int, git_version: str, commit: str) -> None:
        kubelet = f"kubelet/{git_version} (linux/amd64) kubernetes/{commit[:7]}"
        npd = "node-problem-detector/v0.4.0 (linux/amd64) kubernetes/$Format"
        self.get_head: list[str] = []  # a status round's first GET, from the watch cache
        self.etcd_get_head: list[str] = []  # its later tries' GETs, from etcd
        self.patch_head: list[str] = []
        self.ok_tail: list[str] = []
        self.conflict_tail: list[str] = []
        self.npd_tail: list[str] = []
        self.address: list[str] = []
        for i in range(nodes):
            name = node_name(i)
            ip = f"10.64.{i // 250}.{i % 250 + 2}"
            kubelet_addr = f"{ip}:{30000 + (i * 7919) % 30000}"
            self.address.append(kubelet_addr)
            self.get_head.append(f"GET /api/v1/nodes/{name}?resourceVersion=0: (")
            self.etcd_get_head.append(f"GET /api/v1/nodes/{name}: (")
            self.patch_head.append(f"PATCH /api/v1/nodes/{name}/status: (")
            self.ok_tail.append(f") 200 [[{kubelet}] {kubelet_addr}]\n")
            self.conflict_tail.append(f") 409 [[{kubelet}] {kubelet_addr}]\n")
            npd_addr = f"{ip}:{40000 + (i * 104729) % 20000}"
            self.npd_tail.append(f") 200 [[{npd}] {npd_addr}]\n")
        self.kubelet_ua = kubelet


def latency_table(rng: random.Random, size: int, low: float, high: float) -> list[str]:
    """`size` Go-formatted latencies, log-uniform in [low, high] seconds."""
    ratio = high / low
    return [go_duration(low * ratio ** rng.random()) for _ in range(size)]


class Background:
    """Traffic unrelated to the node path: leader election, endpoints, LISTs, events."""

    def __init__(self, rng: random.Random, strings: NodeStrings, git_version: str, sha: str):
        self._rng = rng
        self._s = strings
        ua = f"/{git_version} (linux/amd64) kubernetes/{sha[:7]}"
        self._scheduler = f"[[kube-scheduler{ua}/leader-election] 127.0.0.1:51324]\n"
        self._cm = f"[[kube-controller-manager{ua}/leader-election] 127.0.0.1:51310]\n"
        self._cm_plain = f"[[kube-controller-manager{ua}] 127.0.0.1:51308]\n"
        self.controller_manager = self._cm_plain
        self._apiserver = f"[[kube-apiserver{ua}] 127.0.0.1:51200]\n"
        self._heapster = "[[heapster/v1.4.0 (linux/amd64) kubernetes/$Format] 10.64.255.3:41022]\n"
        self._proxy = f"[[kube-proxy{ua}] "
        self._ticks = 0
        self.other_hwm = {"*api.Pod": 0, "*api.Endpoints": 0, "*api.Service": 0}

    def _lat(self, low: float, high: float) -> str:
        return go_duration(low * (high / low) ** self._rng.random())

    def on_register(self, t: float, i: int, stamp: Stamp, out: list[str]) -> None:
        """A hollow node came up: its kubelet and kube-proxy list what they need."""
        name, addr = node_name(i), self._s.address[i]
        kubelet = f"[[{self._s.kubelet_ua}] {addr}]\n"
        out.append(
            f"I{stamp(t + 0.0011)}wrap.go:42] GET /api/v1/pods?fieldSelector=spec.nodeName%3D"
            f"{name}&resourceVersion=0: ({self._lat(3e-4, 3e-3)}) 200 {kubelet}"
        )
        out.append(
            f"I{stamp(t + 0.0023)}wrap.go:42] POST /api/v1/namespaces/default/events: "
            f"({self._lat(1e-3, 8e-3)}) 201 {kubelet}"
        )
        proxy = f"{self._proxy}{addr.split(':')[0]}:{50000 + i % 10000}]\n"
        for what in ("services", "endpoints"):
            out.append(
                f"I{stamp(t + 0.004)}wrap.go:42] GET /api/v1/{what}?resourceVersion=0: "
                f"({self._lat(5e-4, 5e-3)}) 200 {proxy}"
            )

    def tick(self, t: float, nodes_up: int, stamp: Stamp, out: list[str]) -> None:
        """Once a simulated second: the periodic background requests due now."""
        self._ticks += 1
        n = self._ticks
        if n % 2 == 0:
            for who, client in (
                ("kube-scheduler", self._scheduler),
                ("kube-controller-manager", self._cm),
            ):
                uri = f"/api/v1/namespaces/kube-system/endpoints/{who}"
                get_lat, put_lat = self._lat(2e-4, 1e-3), self._lat(1e-3, 5e-3)
                out.append(f"I{stamp(t + 0.0003)}wrap.go:42] GET {uri}: ({get_lat}) 200 {client}")
                out.append(f"I{stamp(t + 0.0021)}wrap.go:42] PUT {uri}: ({put_lat}) 200 {client}")
        if n % 10 == 0:
            out.append(
                f"I{stamp(t + 0.0051)}wrap.go:42] GET "
                "/api/v1/namespaces/default/endpoints/kubernetes: "
                f"({self._lat(2e-4, 1e-3)}) 200 {self._apiserver}"
            )
        if n % 30 == 0:
            out.append(
                f"I{stamp(t + 0.0074)}wrap.go:42] GET "
                "/api/v1/namespaces/kube-system/pods?resourceVersion=0: "
                f"({self._lat(1e-3, 1e-2)}) 200 {self._cm_plain}"
            )
        if n % 60 == 0 and nodes_up:
            # heapster's node LIST; its cost grows with the cluster.
            out.append(
                f"I{stamp(t + 0.009)}wrap.go:42] GET /api/v1/nodes?resourceVersion=0: "
                f"({go_duration(nodes_up * 4e-5 * (1 + self._rng.random()))}) 200 {self._heapster}"
            )
        # Other cachers see a little churn while nodes come up; they never saturate.
        if nodes_up and n % 7 == 0:
            kind = ("*api.Pod", "*api.Endpoints", "*api.Service")[n % 3]
            if self._rng.random() < 0.3 and self.other_hwm[kind] < 20:
                self.other_hwm[kind] += 1
                out.append(
                    f"I{stamp(t + 0.0099)}cacher.go:566] cacher ({kind}): "
                    f"{self.other_hwm[kind]} objects queued in incoming channel.\n"
                )
