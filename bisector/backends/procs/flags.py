"""The command line of each process of a `procs` cluster: etcd, the candidate's
kube-apiserver and components, the hollow kubelets and the watch load generator, with the
flags read from the tree they are given to, not guessed by its age (`ApiFlags`,
`HollowFlags`)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.procs.cluster import HOLLOW_PREFIX, Layout
from bisector.backends.procs.options import ProcsSettings

STATUS_PERIOD_ENV = "HOLLOW_NODE_STATUS_PERIOD"

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
