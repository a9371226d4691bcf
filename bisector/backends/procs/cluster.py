"""One local cluster of the `procs` backend: its files, ports, commands and checks.

A cluster is etcd, kube-apiserver, N hollow kubelets (kubemark --morph=kubelet) and the
watch load generator, each a plain process in its own process group, started by a
`Step` (`bash -c '( CMD </dev/null >LOG 2>&1 & ...; wait ) & ...'`: the one process door
waits for bash, which leaves the daemon running under a subshell that records its exit
status, and prints its pid). Every one of them carries
the cluster's tag in its environment (bisector.backends.procs.stop), which is how the
teardown finds them all. Ports are free loopback ports; etcd's data and the hollow
nodes' root directories (their dockershim sockets) live in one temporary directory,
on tmpfs when there is one, removed by the teardown.

Serving: a tree without go.mod (Kubernetes <= 1.14) is served on the insecure port as
in 2017; a module-era tree on the secure port with a generated CA, serving certificate,
service-account key and bearer token (`serving = "secure"`), the flags an apiserver
needs since the insecure port went away (1.20).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import re
import shlex
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.collected import ProcessUsage
from bisector.backends.procs.settings import ProcsSettings
from bisector.backends.procs.stop import TAG_ENV
from bisector.backends.steps import Step, step
from bisector.dirs import write_private

HOLLOW_PREFIX = "hollow-node-"
STATUS_PERIOD_ENV = "HOLLOW_NODE_STATUS_PERIOD"
SPAWN_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 10.0
_CLK_TCK = os.sysconf("SC_CLK_TCK")
MIN_PORT = 10000  # below: well-known and registered services


def ephemeral_range(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The kernel's range for outgoing connections' ports (32768-60999 by default)."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    kubelets: tuple[tuple[int, int], ...]  # (port, read-only port) per hollow node
    components: tuple[int, ...] = ()  # the secure port of each of [backends.procs] components

    @classmethod
    def pick(
        cls, nodes: int, ephemeral: tuple[int, int] | None = None, components: int = 0
    ) -> Ports:
        """Free loopback ports, all different, outside the kernel's ephemeral range.

        Not `bind(0)`: that hands out ephemeral ports, and the 16,000 connections the load
        generator makes next take ephemeral ports too: one took a hollow kubelet's port
        before it could bind it ("bind: address already in use"). Each candidate is
        bound and held until all are chosen.
        """
        low, high = ephemeral or ephemeral_range()
        pool = [p for p in range(MIN_PORT, 65536) if not low <= p <= high]
        random.shuffle(pool)
        want = 3 + 2 * nodes + components
        held: list[socket.socket] = []
        try:
            for port in pool:
                if len(held) == want:
                    break
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    s.close()
                    continue
                held.append(s)
            if len(held) < want:
                raise OSError(f"only {len(held)} of {want} free ports outside {low}-{high}")
            ports = [s.getsockname()[1] for s in held]
        finally:
            for s in held:
                s.close()
        pairs = tuple((ports[3 + 2 * i], ports[4 + 2 * i]) for i in range(nodes))
        return cls(ports[0], ports[1], ports[2], pairs, tuple(ports[3 + 2 * nodes :]))

    @classmethod
    def placeholder(cls, nodes: int, components: int = 0) -> Ports:
        """Ports for --dry-run: chosen for real only at launch."""
        kubelets = tuple((10250 + 2 * i, 10251 + 2 * i) for i in range(nodes))
        after = 10250 + 2 * nodes
        return cls(2379, 2380, 8080, kubelets, tuple(after + i for i in range(components)))


@dataclass(frozen=True)
class ClusterFiles:
    """What one evaluation's cluster writes under `<eval>/cluster/`."""

    directory: Path

    @classmethod
    def under(cls, eval_dir: Path) -> ClusterFiles:
        return cls(eval_dir / "cluster")

    @property
    def apiserver_log(self) -> Path:
        return self.directory / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.directory / "etcd.log"

    def hollow_log(self, i: int) -> Path:
        return self.directory / "hollow-nodes" / f"{HOLLOW_PREFIX}{i}.log"

    def component_log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    @property
    def load_log(self) -> Path:
        return self.directory / "watch-load.log"

    @property
    def load_status(self) -> Path:
        return self.directory / "watch-load.json"

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def state(self) -> Path:
        return self.directory / "cluster.json"


@dataclass(frozen=True)
class Credentials:
    """Secure serving: the files the apiserver and its clients are given."""

    ca: Path
    cert: Path
    key: Path
    sa_key: Path
    sa_pub: Path
    token: str
    token_file: Path  # the apiserver's --token-auth-file (CSV)
    client_token: Path  # the bare token, for the load generator


@dataclass(frozen=True)
class Layout:
    """Where one cluster lives: its tag, its temporary root, its files, its ports."""

    tag: str
    root: Path  # temporary: etcd data, hollow nodes' root dirs, credentials
    files: ClusterFiles
    ports: Ports
    secure: bool

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    def hollow_root(self, i: int) -> Path:
        return self.root / f"hn{i}"

    @property
    def server(self) -> str:
        scheme = "https" if self.secure else "http"
        return f"{scheme}://127.0.0.1:{self.ports.apiserver}"

    @property
    def credentials(self) -> Credentials:
        d = self.root / "pki"
        return Credentials(
            d / "ca.crt",
            d / "apiserver.crt",
            d / "apiserver.key",
            d / "sa.key",
            d / "sa.pub",
            token="",
            token_file=d / "tokens.csv",
            client_token=d / "token",
        )


def exit_file(log: Path) -> Path:
    """Where a daemon's exit status is written when it ends (beside its log)."""
    return log.with_suffix(".exit")


@dataclass(frozen=True)
class Daemon:
    """A process to start in the background: its command, its log, its own environment."""

    cmd: Sequence[str | Path]
    log: Path
    env: tuple[tuple[str, str], ...] = ()


def daemon_step(
    cmd: Sequence[str | Path], log: Path, layout: Layout, env: dict[str, str] | None = None
) -> Step:
    """Start `cmd` in the background, output to `log`; prints its pid. A waiting subshell
    (its parent, tagged like it) writes its exit status to `exit_file(log)` when it ends,
    so a skip can say how it ended (bash's `wait`: 128+N for signal N). The pid comes back
    through `<log>.pid`: the one process door reads the output once bash has exited, and
    the subshell outlives it."""
    return step(
        "bash",
        "-c",
        _daemons_script([Daemon(cmd, log)]),
        env={TAG_ENV: layout.tag, **(env or {})},
        timeout=SPAWN_TIMEOUT_S,
    )


def daemons_step(daemons: Sequence[Daemon], layout: Layout) -> Step:
    """Start every daemon at once, as `daemon_step` starts one; prints their pids in order.
    One bash for a batch: a bash per hollow node took 0.1-0.2 s each on a busy 2-core
    machine, 16 s of every launch for 100 nodes (the real 2017 hunt, 4 December 2026)."""
    return step(
        "bash", "-c", _daemons_script(daemons), env={TAG_ENV: layout.tag}, timeout=SPAWN_TIMEOUT_S
    )


def _daemons_script(daemons: Sequence[Daemon]) -> str:
    q = shlex.quote
    starts, waits = [], []
    for d in daemons:
        pid = q(str(d.log.with_suffix(".pid")))
        # `env` execs the command: `$!` is the daemon's own pid, not a wrapper's.
        prefix = ["env", *(f"{k}={v}" for k, v in d.env)] if d.env else []
        cmd = shlex.join([*prefix, *(str(c) for c in d.cmd)])
        starts.append(
            f"rm -f {pid}; ( {cmd} </dev/null >{q(str(d.log))} 2>&1 & "
            f"echo $! >{pid}; wait $!; echo $? >{q(str(exit_file(d.log)))} ) >/dev/null 2>&1 &"
        )
        waits.append(f"until [ -s {pid} ]; do sleep 0.01; done; cat {pid}")
    return " ".join(starts) + " " + "; ".join(waits)


# Flags read from the tree they are given to, not guessed by its age.
# --advertise-address: staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go
# (1.32). Without it the apiserver advertises the host's default-route address (serving.go's
# ResolveBindAddress), and 127.0.0.1 is refused for the `kubernetes` Endpoints ("may not be
# in the loopback range"); 192.0.2.1 (TEST-NET-1, RFC 5737) is never contacted.
_RUN_OPTIONS = (
    "staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go",
    "cmd/kube-apiserver/app/options/options.go",
)
ADVERTISE_ADDRESS = "192.0.2.1"
# --use-host-image-service: cmd/kubemark/app/hollow_node.go (1.32; default true dials
# containerd's socket, pkg/kubemark/hollow_kubelet.go). --logtostderr: glog's own flag, on
# flag.CommandLine at init (vendor/github.com/golang/glog/glog.go), which kubemark adds to
# its flags; klog v2 trees register none there, and 1.32's kubemark has no such flag.
_HOLLOW_NODE_GO = "cmd/kubemark/app/hollow_node.go"
_GLOG = "vendor/github.com/golang/glog/glog.go"
_HOLLOW_KUBELET_GO = "pkg/kubemark/hollow_kubelet.go"


def _mentions(tree: Path, files: Sequence[str], text: str) -> bool:
    for name in files:
        with contextlib.suppress(OSError):
            if text in (tree / name).read_text(encoding="utf-8", errors="replace"):
                return True
    return False


@dataclass(frozen=True)
class ApiFlags:
    """What the candidate's kube-apiserver accepts, beyond what every version does."""

    advertise_address: bool = False

    @classmethod
    def from_tree(cls, tree: Path) -> ApiFlags:
        return cls(_mentions(tree, _RUN_OPTIONS, '"advertise-address"'))


@dataclass(frozen=True)
class HollowFlags:
    """What the harness's kubemark accepts and honours (read from its patched tree)."""

    logtostderr: bool = True
    host_image_service: bool = False  # has --use-host-image-service (set false)
    status_period_env: bool = True  # honours HOLLOW_NODE_STATUS_PERIOD (the patch)

    @classmethod
    def from_tree(cls, tree: Path) -> HollowFlags:
        return cls(
            logtostderr=_mentions(tree, [_GLOG], '"logtostderr"'),
            host_image_service=_mentions(tree, [_HOLLOW_NODE_GO], '"use-host-image-service"'),
            status_period_env=_mentions(tree, [_HOLLOW_KUBELET_GO], STATUS_PERIOD_ENV),
        )

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> HollowFlags:
        data = json.loads(text)
        return cls(
            bool(data["logtostderr"]),
            bool(data["host_image_service"]),
            bool(data["status_period_env"]),
        )


def etcd_cmd(cfg: ProcsSettings, layout: Layout, etcd: str | None = None) -> list[str]:
    client = f"http://127.0.0.1:{layout.ports.etcd_client}"
    peer = f"http://127.0.0.1:{layout.ports.etcd_peer}"
    return [
        etcd or cfg.etcd,
        "--name",
        "bisector",
        "--data-dir",
        str(layout.etcd_data),
        "--listen-client-urls",
        client,
        "--advertise-client-urls",
        client,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        f"bisector={peer}",
        "--initial-cluster-state",
        "new",
    ]


def apiserver_cmd(
    cfg: ProcsSettings, binary: Path, layout: Layout, api: ApiFlags = ApiFlags()
) -> list[str]:
    """The flags for the tree's generation: 1.7's insecure port, or secure serving."""
    common = [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{layout.ports.etcd_client}",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--authorization-mode=AlwaysAllow",
        f"--v={cfg.verbosity}",
    ]
    if not layout.secure:
        # As measured for kubernetes 1.7 (June 2017): healthy in about a second.
        flags = [
            "--storage-backend=etcd3",
            "--storage-media-type=application/vnd.kubernetes.protobuf",
            "--insecure-bind-address=127.0.0.1",
            f"--insecure-port={layout.ports.apiserver}",
            "--secure-port=0",
            "--admission-control=AlwaysAdmit",
        ]
    else:
        c = layout.credentials
        flags = [
            "--bind-address=127.0.0.1",
            f"--secure-port={layout.ports.apiserver}",
            f"--tls-cert-file={c.cert}",
            f"--tls-private-key-file={c.key}",
            f"--token-auth-file={c.token_file}",
            f"--service-account-key-file={c.sa_pub}",
            f"--service-account-signing-key-file={c.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--disable-admission-plugins=ServiceAccount",
        ]
        if api.advertise_address:
            flags.append(f"--advertise-address={ADVERTISE_ADDRESS}")
    return [*common, *flags, *cfg.apiserver_args]


def component_cmd(name: str, binary: Path, layout: Layout, port: int) -> list[str]:
    """kube-controller-manager or kube-scheduler against the cluster's apiserver, with the
    cluster's kubeconfig (the tool's token) for its API, authentication and authorization
    clients, serving on a loopback port (the defaults, 10257/10259, bind every interface),
    no leader election. Flags of v1.32: --kubeconfig (cmd/kube-controller-manager/app/
    options/options.go:292, cmd/kube-scheduler/app/options/deprecated.go:46),
    --bind-address/--secure-port (staging/src/k8s.io/apiserver/pkg/server/options/
    serving.go), --leader-elect (component-base/config/options/leaderelectionconfig.go),
    --service-account-private-key-file/--root-ca-file (cmd/kube-controller-manager/app/
    options/serviceaccountcontroller.go:36-38)."""
    kubeconfig = str(layout.files.kubeconfig)
    cmd = [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        "--v=1",
    ]
    if name == "kube-controller-manager":
        c = layout.credentials
        cmd += [
            f"--service-account-private-key-file={c.sa_key}",
            f"--root-ca-file={c.ca}",
            "--use-service-account-credentials=false",
        ]
    return cmd


def component_healthy(port: int, timeout: float = HTTP_TIMEOUT_S) -> bool:
    """/healthz of a component on its secure port says ok. Its serving certificate is
    self-signed at start (no --tls-cert-file): not verified, loopback only."""
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
        url = f"https://127.0.0.1:{port}/healthz"
        with urllib.request.urlopen(url, timeout=timeout, context=tls) as answer:
            return bool(answer.read(64).strip() == b"ok")
    return False


def hollow_cmd(
    kubemark: Path, layout: Layout, i: int, flags: HollowFlags = HollowFlags()
) -> list[str]:
    port, read_only = layout.ports.kubelets[i]
    cmd = [
        str(kubemark),
        "--morph=kubelet",
        f"--name={HOLLOW_PREFIX}{i}",
        f"--kubeconfig={layout.files.kubeconfig}",
        f"--kubelet-port={port}",
        f"--kubelet-read-only-port={read_only}",
    ]
    if flags.logtostderr:
        cmd.append("--logtostderr=true")
    if flags.host_image_service:
        cmd.append("--use-host-image-service=false")  # the fake image service, no containerd
    return cmd


def hollow_env(cfg: ProcsSettings, layout: Layout, i: int) -> dict[str, str]:
    return {"TMPDIR": str(layout.hollow_root(i)), STATUS_PERIOD_ENV: f"{cfg.node_status_period:g}s"}


def load_cmd(cfg: ProcsSettings, layout: Layout) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "bisector.backends.procs.load",
        "--server",
        layout.server,
        "--watchers",
        str(cfg.watchers),
        "--live",
        str(min(cfg.hollow_nodes, cfg.watchers)),
        "--prefix",
        HOLLOW_PREFIX,
        "--open-rate",
        f"{cfg.watch_open_rate:g}",
        "--status",
        str(layout.files.load_status),
    ]
    if cfg.watch_load == "pods-without-rv":
        cmd += ["--pods-without-rv", "--timeout-seconds", f"{cfg.watch_timeout:.0f}"]
    if layout.secure:
        c = layout.credentials
        cmd += ["--ca-file", str(c.ca), "--token-file", str(c.client_token)]
    for spec in cfg.watches:  # the other watches, after the node watches
        cmd += ["--watch", spec.to_json()]
    return cmd


def stop_step(layout: Layout, grace_s: float) -> Step:
    """The teardown: every process tagged with this cluster's tag, then its temporary root."""
    return step(
        sys.executable,
        "-m",
        "bisector.backends.procs.stop",
        "--tag",
        layout.tag,
        "--remove",
        layout.root,
        "--grace",
        f"{grace_s:g}",
        timeout=grace_s + 120,
    )


def kubeconfig_text(layout: Layout, token: str | None) -> str:
    cluster = f'{{server: "{layout.server}"'
    if layout.secure:
        cluster += f', certificate-authority: "{layout.credentials.ca}"'
    cluster += "}"
    user = f'{{token: "{token}"}}' if token else "{}"
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: procs\n  cluster: {cluster}\n"
        f"users:\n- name: procs\n  user: {user}\n"
        "contexts:\n- name: procs\n  context: {cluster: procs, user: procs}\n"
        "current-context: procs\n"
    )


def write_credentials(layout: Layout) -> str:
    """A CA, a serving certificate for 127.0.0.1, a service-account key pair and a bearer
    token in `<root>/pki` (0600); returns the token."""
    from bisector.backends.procs.pki import make_pki

    c = layout.credentials
    c.ca.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pki = make_pki()
    write_private(c.ca, pki.ca_pem)
    write_private(c.cert, pki.cert_pem)
    write_private(c.key, pki.key_pem)
    write_private(c.sa_key, pki.sa_key_pem)
    write_private(c.sa_pub, pki.sa_pub_pem)
    write_private(c.token_file, f"{pki.token},bisector,bisector,system:masters\n")
    write_private(c.client_token, pki.token + "\n")
    return pki.token


# -- talking to the apiserver ---------------------------------------------------------


@dataclass
class Api:
    """GETs against the cluster's apiserver (plain HTTP, or HTTPS with the generated CA)."""

    base: str
    ca: Path | None = None
    token: str | None = None
    _tls: ssl.SSLContext | None = field(default=None, init=False)

    def get(self, path: str, timeout: float = HTTP_TIMEOUT_S) -> bytes:
        request = urllib.request.Request(self.base + path)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        if self.ca is not None and self._tls is None:
            self._tls = ssl.create_default_context(cafile=str(self.ca))
        # urlopen's timeout bounds each socket read, not the answer: an apiserver that
        # trickles its body (out of file descriptors, starved) would hold a launch wait
        # past ready_timeout. The whole answer gets `timeout`.
        deadline = time.monotonic() + timeout
        body = bytearray()
        with urllib.request.urlopen(request, timeout=timeout, context=self._tls) as answer:
            while chunk := answer.read1(1 << 16):
                body += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError(f"GET {path}: no whole answer in {timeout:g}s")
        return bytes(body)

    def try_get(self, path: str, timeout: float = HTTP_TIMEOUT_S) -> bytes | None:
        with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
            return self.get(path, timeout)
        return None


def ready_hollow_nodes(nodes_json: bytes) -> int:
    """How many hollow-node-* nodes say Ready=True in a node list."""
    try:
        items = json.loads(nodes_json).get("items") or []
    except (ValueError, AttributeError):
        return 0
    ready = 0
    for node in items:
        try:
            name = node["metadata"]["name"]
            conditions = node["status"]["conditions"]
        except (KeyError, TypeError):
            continue
        if name.startswith(HOLLOW_PREFIX) and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
        ):
            ready += 1
    return ready


def served_commit(version_json: bytes) -> str | None:
    try:
        commit = json.loads(version_json).get("gitCommit")
    except (ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and commit else None  # "" says no commit


# -- what the processes used ----------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    cpu_s: float
    at: float  # epoch seconds


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of `pid` so far; None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime (fields 14, 15)


def peak_rss_bytes(pid: int) -> int:
    """VmHWM: the largest resident set the process has had (0 when unreadable)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def usage(name: str, pids: Sequence[int], before: dict[int, Sample], now: float) -> ProcessUsage:
    """CPU seconds of `pids` (summed) since `before`, the largest peak RSS among them."""
    cpu = 0.0
    start = now
    for pid in pids:
        then = before.get(pid)
        current = cpu_seconds(pid)
        if then is None or current is None:
            continue
        cpu += max(0.0, current - then.cpu_s)
        start = min(start, then.at)
    peak = max((peak_rss_bytes(p) for p in pids), default=0)
    return ProcessUsage(name, round(cpu, 3), peak, start, now)


def sample(pids: Sequence[int], at: float) -> dict[int, Sample]:
    taken = {}
    for pid in pids:
        cpu = cpu_seconds(pid)
        if cpu is not None:
            taken[pid] = Sample(cpu, at)
    return taken


def how_it_ended(log: Path, wait_s: float = 2.0) -> str:
    """`exit code N` or `killed by SIGNAME`, from the exit file its waiter writes (given
    `wait_s` to appear: the waiter writes it just after the process is reaped)."""
    path = exit_file(log)
    deadline = time.monotonic() + wait_s
    while True:
        with contextlib.suppress(OSError):
            text = path.read_text().strip()
            if text.isdigit():
                return describe_status(int(text))
        if time.monotonic() >= deadline:
            return "how it ended is not known: no exit status was recorded"
        time.sleep(0.05)


def describe_status(status: int) -> str:
    """bash's `wait` status: 128+N is signal N; glog's Fatal exits 255, no signal."""
    if status > 128:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(status - 128).name}"
    return f"exit code {status}"


# What the system said, when it said so: the reason names it rather than its consequences.
_SYSTEM_SAID = (
    ("no space left", re.compile(r"no space left on device", re.I)),
    ("too many open files", re.compile(r"too many open files", re.I)),
)
# An error line in the logs these programs write: glog's E/F severities (kube-apiserver,
# kubemark: `E1201 12:00:00.000000 ...`), capnslog's C/E levels (etcd 3.x: `2017-06-01
# 12:00:00.000000 C | etcdserver: create wal error: ...`), zap's JSON levels (etcd 3.5),
# a Go panic or fatal error, and Python's (the load generator) traceback's last line.
_ERROR_LINE = re.compile(
    r"^[EF]\d{4} \d\d:\d\d:\d\d"
    r"|^\d{4}-\d\d-\d\d[ T][\d:.]+\S* [CE] \| "
    r'|"level":"(?:error|fatal|panic|dpanic)"'
    r"|^panic: |^fatal error: "
    r"|^[A-Za-z_.]*(?:Error|Exception): "
)
_SCAN_BYTES = 16 << 20  # how much of a log is searched for its first error line


def first_error(path: Path, chars: int = 300) -> str:
    """What a process's log says went wrong: the system's own words (`no space left`,
    `too many open files`) with the first line saying them, else its first error line,
    else its last line."""
    try:
        with path.open("rb") as handle:
            text = handle.read(_SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return f"no log at {path}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"{path.name} is empty"
    for said, pattern in _SYSTEM_SAID:
        for line in lines:
            if pattern.search(line):
                return f"{said}: {line}"[:chars]
    for line in lines:
        if _ERROR_LINE.search(line):
            return line[:chars]
    return f"no error line; the last: {lines[-1]}"[:chars]


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
