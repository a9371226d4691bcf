"""One local cluster of the `procs` backend: where it lives (its tag, temporary root,
files and ports), how its processes are started and stopped, its credentials.
Each process's command line is bisector.backends.procs.flags; talking to it over HTTP,
bisector.backends.procs.api; what its processes used and how one ended,
bisector.backends.procs.processes.

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

import random
import shlex
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.procs.stop import TAG_ENV
from bisector.backends.steps import Step, step
from bisector.dirs import write_private

HOLLOW_PREFIX = "hollow-node-"
SPAWN_TIMEOUT_S = 30.0
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
    One bash for a batch: a bash per hollow node takes 0.1-0.2 s each on a busy 2-core
    machine, 16 s of every launch for 100 nodes (measured: docs/procs.md)."""
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
