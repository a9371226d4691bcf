"""Can the base cluster hold the hollow nodes? The arithmetic, checked at config time.

start-kubemark.sh (2017) runs every hollow node as one pod of the base cluster,
with these resource requests (test/kubemark/resources/hollow-node_template.yaml
and start-kubemark.sh at kubernetes 7043372 and 1444d25):

* hollow-kubelet: 50m CPU, 100M memory;
* hollow-proxy: 20m CPU (50m above 1000 nodes), (100 * 1024 + 100 * N) Ki memory;
* hollow-node-problem-detector: 20m CPU, 20Mi memory;

plus one heapster pod (resources/heapster_template.json filled in by
start-kubemark.sh): 80 + N/2 m CPU, 200 + 4N Mi and 200 * 1024 + 500N Ki memory.

Each base node gives its machine type's vCPUs and memory, less what kube-up's
own per-node pods request (kube-proxy 100m CPU, fluentd-gcp 100m CPU and
200Mi), and at most 110 pods (the kubelet's default --max-pods). When the hollow
nodes do not fit, start-kubemark.sh waits 30 minutes for Ready nodes and exits
1 for every candidate: a config like that is refused before anything is spent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bisector.errors import ConfigError

MIB = 1024 * 1024
# Memory per vCPU of the predefined machine types, in MiB (GCE's "GB" are GiB).
_MIB_PER_CPU = {
    "n1-standard": 3840,
    "n1-highmem": 6656,
    "n1-highcpu": 921.6,
    "n2-standard": 4096,
    "n2-highmem": 8192,
    "n2-highcpu": 1024,
    "e2-standard": 4096,
    "e2-highmem": 8192,
    "e2-highcpu": 1024,
}
# The vCPU counts each predefined family comes in (cloud.google.com/compute/docs/
# general-purpose-machines, "N1 machine series", "E2 machine series", "N2 machine series"):
# n1-standard-999 does not exist, and GCE refuses it ("Machine type with name ... does not
# exist in zone"), so bisector does too, before anything is created.
SIZES = {
    "n1-standard": (1, 2, 4, 8, 16, 32, 64, 96),
    "n1-highmem": (2, 4, 8, 16, 32, 64, 96),
    "n1-highcpu": (2, 4, 8, 16, 32, 64, 96),
    "n2-standard": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    "n2-highmem": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    "n2-highcpu": (2, 4, 8, 16, 32, 48, 64, 80, 96),
    "e2-standard": (2, 4, 8, 16, 32),
    "e2-highmem": (2, 4, 8, 16),
    "e2-highcpu": (2, 4, 8, 16, 32),
}
_PREDEFINED = re.compile(r"^(?P<family>[a-z0-9]+-[a-z]+)-(?P<cpus>\d+)$")
_CUSTOM = re.compile(r"^(?:[a-z0-9]+-)?custom-(?P<cpus>\d+)-(?P<mib>\d+)$")

MAX_PODS_PER_NODE = 110  # kubelet default --max-pods
SYSTEM_PODS_PER_NODE = 2  # kube-proxy, fluentd-gcp
SYSTEM_MILLICPU_PER_NODE = 200
SYSTEM_BYTES_PER_NODE = 200 * MIB


@dataclass(frozen=True)
class Machine:
    millicpu: int
    bytes: int


def machine(machine_type: str, where: str) -> Machine:
    """vCPUs and memory of a GCE machine type; an unknown one is a config error."""
    custom = _CUSTOM.match(machine_type)
    if custom:
        return Machine(int(custom["cpus"]) * 1000, int(custom["mib"]) * MIB)
    predefined = _PREDEFINED.match(machine_type)
    if predefined and predefined["family"] in _MIB_PER_CPU:
        family, cpus = predefined["family"], int(predefined["cpus"])
        if cpus not in SIZES[family]:
            sizes = ", ".join(str(n) for n in SIZES[family])
            raise ConfigError(
                f"{where}: machine type {machine_type!r} does not exist: {family} comes "
                f"with {sizes} vCPUs"
            )
        return Machine(cpus * 1000, int(cpus * _MIB_PER_CPU[family] * MIB))
    known = ", ".join(f"{f}-N" for f in _MIB_PER_CPU)
    raise ConfigError(
        f"{where}: cannot tell the capacity of machine type {machine_type!r}; "
        f"use one of {known} or custom-CPUS-MIB"
    )


def exists(machine_type: str) -> bool:
    """Whether `machine_type` is a predefined or custom type bisector knows."""
    try:
        machine(machine_type, "")
    except ConfigError:
        return False
    return True


@dataclass(frozen=True)
class Demand:
    millicpu: int
    bytes: int
    pods: int


def hollow_node_pod(num_nodes: int) -> Demand:
    """Requests of one hollow-node pod when the kubemark cluster has `num_nodes`."""
    proxy_cpu = 50 if num_nodes > 1000 else 20
    kubelet = Demand(50, 100_000_000, 1)
    proxy = Demand(proxy_cpu, (100 * 1024 + 100 * num_nodes) * 1024, 0)
    npd = Demand(20, 20 * MIB, 0)
    return Demand(
        kubelet.millicpu + proxy.millicpu + npd.millicpu,
        kubelet.bytes + proxy.bytes + npd.bytes,
        1,
    )


def heapster_pod(num_nodes: int) -> Demand:
    return Demand(
        80 + num_nodes // 2,
        (200 + 4 * num_nodes) * MIB + (200 * 1024 + 500 * num_nodes) * 1024,
        1,
    )


def demand(num_nodes: int) -> Demand:
    pod, heapster = hollow_node_pod(num_nodes), heapster_pod(num_nodes)
    return Demand(
        pod.millicpu * num_nodes + heapster.millicpu,
        pod.bytes * num_nodes + heapster.bytes,
        num_nodes + 1,
    )


def capacity(num_nodes: int, node: Machine) -> Demand:
    return Demand(
        num_nodes * (node.millicpu - SYSTEM_MILLICPU_PER_NODE),
        num_nodes * (node.bytes - SYSTEM_BYTES_PER_NODE),
        num_nodes * (MAX_PODS_PER_NODE - SYSTEM_PODS_PER_NODE),
    )


def _gb(n: int) -> str:
    return f"{n / 1e9:,.0f} GB"


def check_fits(
    where: str, base_nodes: int, node_size: str, hollow_nodes: int, kubemark_hint: str
) -> None:
    """ConfigError with the arithmetic when the base cluster cannot hold the hollow nodes."""
    node = machine(node_size, where)
    need, have = demand(hollow_nodes), capacity(base_nodes, node)
    short: list[str] = []
    if need.millicpu > have.millicpu:
        short.append(f"CPU {need.millicpu / 1000:,.1f} > {have.millicpu / 1000:,.1f} vCPU")
    if need.bytes > have.bytes:
        short.append(f"memory {_gb(need.bytes)} > {_gb(have.bytes)}")
    if need.pods > have.pods:
        short.append(f"pods {need.pods} > {have.pods}")
    if not short:
        return
    pod = hollow_node_pod(hollow_nodes)
    raise ConfigError(
        f"{where}: {base_nodes} x {node_size} cannot hold {hollow_nodes} hollow nodes "
        f"({pod.millicpu}m CPU and {pod.bytes / 1e6:,.0f} MB each, plus heapster): "
        f"{'; '.join(short)} (requests vs capacity less kube-proxy and fluentd on each node). "
        f"Raise `num_nodes` or `node_size`, or lower {kubemark_hint}"
    )
