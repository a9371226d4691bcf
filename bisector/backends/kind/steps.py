"""The `kind` backend's settings and the exact commands (as `Step`s) it runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.steps import RetryPolicy, Step, step
from bisector.config import Section
from bisector.errors import ConfigError

KEYS = (
    "cluster_name", "node_image_repo", "kubemark_registry", "hollow_nodes", "min_version",
    "api_server_verbosity", "container_log_max_size", "kind_config", "instrument_patch",
    "git_timeout", "node_image_timeout", "kubemark_build_timeout", "create_timeout",
    "delete_timeout", "kubectl_timeout", "hollow_ready_timeout", "logs_timeout",
    "retry_attempts", "retry_initial", "retry_max", "arch", "workload", "workload_timeout",
)  # fmt: skip

# The kubemark binary is built in kubernetes' own build container (build/run.sh), as
# `kind build node-image` builds the node's binaries: the container brings the Go
# version each candidate needs, which one host toolchain cannot across a range.
# build/run.sh copies its output back to _output/dockerized/bin/<os>/<arch>.
KUBEMARK_BINARY = "_output/dockerized/bin/linux/{arch}/kubemark"
KUBEMARK_IMAGE_DIR = "cluster/images/kubemark"
# The architectures `kind build node-image --arch` builds (kind pkg/build/nodeimage
# supportedArch); node image and kubemark are built for the same one.
ARCHES = ("amd64", "arm64")
# Keys of the hollow nodes' `kubeconfig` secret: the ones start-kubemark.sh creates
# for the three containers of the real hollow-node template (kubelet, proxy, npd).
SECRET_KEYS = ("kubelet.kubeconfig", "kubeproxy.kubeconfig", "npd.kubeconfig")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int] | None:
    """(major, minor) of `v1.7.0-alpha.4-123-g7043372`, `v1.15.0`, `1.15`; else None."""
    match = _VERSION.match(text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclass(frozen=True)
class KindSettings:
    cluster_name: str
    node_image_repo: str
    kubemark_registry: str
    hollow_nodes: int
    min_version: tuple[int, int]
    api_server_verbosity: int
    container_log_max_size: str
    kind_config: Path | None
    instrument_patch: str | None
    git_timeout: float
    node_image_timeout: float
    kubemark_build_timeout: float
    create_timeout: float
    delete_timeout: float
    kubectl_timeout: float
    hollow_ready_timeout: float
    logs_timeout: float
    retry: RetryPolicy
    arch: str = "amd64"
    workload: str | None = None  # a command that is the warmup (e.g. clusterloader2 ...)
    workload_timeout: float = 3 * 3600.0

    @classmethod
    def from_section(cls, s: Section) -> KindSettings:
        s.check_keys(KEYS)
        raw_min = s.get_str("min_version", "v1.15")
        min_version = parse_version(raw_min)
        if min_version is None:
            raise ConfigError(f"{s.file}: key `min_version`: write a version such as v1.15")
        kind_config = s.opt_str("kind_config")
        arch = s.get_str("arch", "amd64")
        if arch not in ARCHES:
            raise ConfigError(
                f"{s.file}: key `arch`: {arch!r} is not one kind builds; write amd64 or arm64 "
                "(your docker host's architecture)"
            )
        return cls(
            cluster_name=s.get_str("cluster_name", "bisector"),
            node_image_repo=s.get_str("node_image_repo", "kindest/node"),
            kubemark_registry=s.get_str("kubemark_registry", "bisector"),
            hollow_nodes=s.get_int("hollow_nodes", 90),
            min_version=min_version,
            api_server_verbosity=s.get_int("api_server_verbosity", 3),
            container_log_max_size=s.get_str("container_log_max_size", "1Gi"),
            kind_config=Path(kind_config).expanduser() if kind_config else None,
            instrument_patch=s.opt_str("instrument_patch"),
            git_timeout=s.get_duration("git_timeout", "2m", positive=True),
            node_image_timeout=s.get_duration("node_image_timeout", "2h", positive=True),
            kubemark_build_timeout=s.get_duration("kubemark_build_timeout", "1h", positive=True),
            create_timeout=s.get_duration("create_timeout", "15m", positive=True),
            delete_timeout=s.get_duration("delete_timeout", "5m", positive=True),
            kubectl_timeout=s.get_duration("kubectl_timeout", "2m", positive=True),
            hollow_ready_timeout=s.get_duration("hollow_ready_timeout", "15m", positive=True),
            logs_timeout=s.get_duration("logs_timeout", "10m", positive=True),
            retry=RetryPolicy(
                s.get_int("retry_attempts", 3),
                s.get_duration("retry_initial", "10s"),
                s.get_duration("retry_max", "2m"),
            ),
            arch=arch,
            workload=s.opt_str("workload"),
            workload_timeout=s.get_duration("workload_timeout", "3h"),
        )


def cluster(cfg: KindSettings, slot: int) -> str:
    return cfg.cluster_name if slot == 0 else f"{cfg.cluster_name}-{slot}"


def resource_id(cfg: KindSettings, slot: int) -> str:
    return f"kind/cluster/{cluster(cfg, slot)}"


def node_image(cfg: KindSettings, tag: str) -> str:
    return f"{cfg.node_image_repo}:{tag}"


def kubemark_image(cfg: KindSettings, tag: str) -> str:
    return f"{cfg.kubemark_registry}/kubemark:{tag}"


def describe(cfg: KindSettings, worktree: Path, commit: str) -> Step:
    return step(
        "git", "describe", "--tags", "--match", "v[0-9]*", "--abbrev=14", commit,
        cwd=worktree, timeout=cfg.git_timeout,
    )  # fmt: skip


def image_exists(image: str, timeout: float) -> Step:
    return step("docker", "image", "inspect", "--format", "{{.Id}}", image, timeout=timeout)


def build_steps(cfg: KindSettings, worktree: Path, tag: str) -> list[Step]:
    """Node image, then the kubemark binary and image.

    `kind build node-image <source dir>` takes the source as an argument since kind
    v0.11.0. The kubemark image is what cluster/images/kubemark's `make build` does
    (`docker build --pull -t <image> .` there), run directly: the Makefile's naming
    changed across versions (`$(REGISTRY)/$(PROJECT)/kubemark`, no tag, in 2018;
    `$(REGISTRY)/kubemark:$(IMAGE_TAG)` later), the Dockerfile's place did not.
    """
    image_dir = worktree / KUBEMARK_IMAGE_DIR
    return [
        step("kind", "build", "node-image", worktree.absolute(), "--image", node_image(cfg, tag),
             "--arch", cfg.arch, cwd=worktree, timeout=cfg.node_image_timeout),
        step("build/run.sh", "make", "all", "WHAT=cmd/kubemark",
             f"KUBE_BUILD_PLATFORMS=linux/{cfg.arch}",
             cwd=worktree, timeout=cfg.kubemark_build_timeout),
        step("cp", KUBEMARK_BINARY.format(arch=cfg.arch), f"{KUBEMARK_IMAGE_DIR}/kubemark",
             cwd=worktree, timeout=cfg.git_timeout),
        step("docker", "build", "--pull", f"--platform=linux/{cfg.arch}",
             "-t", kubemark_image(cfg, tag), ".",
             cwd=image_dir, timeout=cfg.kubemark_build_timeout),
    ]  # fmt: skip


@dataclass(frozen=True)
class EvalFiles:
    """The files one evaluation writes into its eval_dir."""

    directory: Path  # 0700: both kubeconfigs are cluster-admin credentials
    kind_config: Path
    kubeconfig: Path  # host-side, for kubectl (kind writes it 0600)
    hollow_kubeconfig: Path  # in-cluster address, for the hollow nodes' secret (0600)
    manifest: Path
    peek_log: Path  # the apiserver log so far, while the warmup runs; never the final log
    restarts: Path  # the apiserver's restart count once the hollow nodes were Ready

    @classmethod
    def under(cls, eval_dir: Path) -> EvalFiles:
        d = eval_dir / "kind"
        return cls(
            d,
            d / "cluster.yaml",
            d / "kubeconfig",
            d / "hollow.kubeconfig",
            d / "hollow-node.yaml",
            eval_dir / "peek" / "kube-apiserver.log",
            d / "apiserver-restarts",
        )


def create(cfg: KindSettings, slot: int, tag: str, files: EvalFiles) -> Step:
    return step(
        "kind", "create", "cluster", "--name", cluster(cfg, slot), "--image", node_image(cfg, tag),
        "--config", files.kind_config, "--kubeconfig", files.kubeconfig,
        "--wait", f"{int(cfg.create_timeout)}s", timeout=cfg.create_timeout + 60,
    )  # fmt: skip


def delete(cfg: KindSettings, slot: int, files: EvalFiles) -> Step:
    return step(
        "kind", "delete", "cluster", "--name", cluster(cfg, slot),
        "--kubeconfig", files.kubeconfig, timeout=cfg.delete_timeout,
    )  # fmt: skip


def hollow_steps(cfg: KindSettings, slot: int, tag: str, files: EvalFiles) -> list[Step]:
    """Load the kubemark image, create namespace + kubeconfig secret, start hollow nodes."""
    k = ("kubectl", "--kubeconfig", str(files.kubeconfig))
    t = cfg.kubectl_timeout
    ready = cfg.hollow_ready_timeout
    return [
        step("kind", "load", "docker-image", kubemark_image(cfg, tag), "--name",
             cluster(cfg, slot), timeout=cfg.create_timeout),
        step(*k, "create", "namespace", "kubemark", timeout=t),
        step(*k, "create", "secret", "generic", "kubeconfig", "--namespace", "kubemark",
             *(f"--from-file={key}={files.hollow_kubeconfig}" for key in SECRET_KEYS),
             timeout=t),
        step(*k, "apply", "-f", files.manifest, timeout=t),
        step(*k, "rollout", "status", "deployment/hollow-node", "--namespace", "kubemark",
             f"--timeout={int(ready)}s", timeout=ready + 60),
    ]  # fmt: skip


# How often launch counts the Ready hollow nodes, up to hollow_ready_timeout.
NODES_POLL_S = 10.0


def get_nodes(cfg: KindSettings, files: EvalFiles) -> Step:
    """`kubectl get nodes --no-headers`: NAME STATUS ROLES AGE VERSION per line."""
    return step(
        "kubectl", "--kubeconfig", files.kubeconfig, "get", "nodes", "--no-headers",
        timeout=cfg.kubectl_timeout,
    )  # fmt: skip


def ready_hollow_nodes(get_nodes_output: str) -> int:
    """Hollow nodes (named after their `hollow-node-...` pods) whose STATUS is Ready.

    STATUS is `Ready`, `NotReady` or e.g. `Ready,SchedulingDisabled`; the kind node
    itself is not counted.
    """
    count = 0
    for line in get_nodes_output.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0].startswith("hollow-node-"):
            count += "Ready" in fields[1].split(",")
    return count


def internal_kubeconfig(cfg: KindSettings, slot: int) -> Step:
    return step(
        "kind", "get", "kubeconfig", "--internal", "--name", cluster(cfg, slot),
        timeout=cfg.kubectl_timeout,
    )  # fmt: skip


def apiserver_pod(cfg: KindSettings, slot: int) -> str:
    """The static pod's mirror: `<pod>-<node>`, the node `<cluster>-control-plane`."""
    return f"kube-apiserver-{cluster(cfg, slot)}-control-plane"


def apiserver_logs(cfg: KindSettings, slot: int, files: EvalFiles) -> Step:
    return step(
        "kubectl", "--kubeconfig", files.kubeconfig, "logs", "--namespace", "kube-system",
        apiserver_pod(cfg, slot), timeout=cfg.logs_timeout,
    )  # fmt: skip


def apiserver_restarts(cfg: KindSettings, slot: int, files: EvalFiles) -> Step:
    """The apiserver container's restart count: `kubectl logs` shows the current
    container only, so a restart during the run cuts the log short."""
    return step(
        "kubectl", "--kubeconfig", files.kubeconfig, "get", "pod", "--namespace", "kube-system",
        apiserver_pod(cfg, slot), "-o", "jsonpath={.status.containerStatuses[*].restartCount}",
        timeout=cfg.kubectl_timeout,
    )  # fmt: skip


def parse_restarts(text: str) -> int | None:
    """Sum of the space-separated restart counts jsonpath prints; None if not numbers."""
    words = text.split()
    if not words or not all(w.isdigit() for w in words):
        return None
    return sum(int(w) for w in words)


def apiserver_metrics(cfg: KindSettings, files: EvalFiles) -> Step:
    """The apiserver's /metrics (Prometheus text), through the cluster's own kubeconfig."""
    return step(
        "kubectl", "--kubeconfig", files.kubeconfig, "get", "--raw", "/metrics",
        timeout=cfg.kubectl_timeout,
    )  # fmt: skip


def workload(cfg: KindSettings, files: EvalFiles, worktree: Path, report_dir: Path) -> Step:
    """The configured workload, run in the candidate's worktree against this cluster:
    KUBECONFIG is the cluster's, BISECTOR_REPORT_DIR where its CL2 report goes."""
    assert cfg.workload is not None
    env = {"KUBECONFIG": str(files.kubeconfig), "BISECTOR_REPORT_DIR": str(report_dir)}
    return step("bash", "-c", cfg.workload, cwd=worktree, env=env, timeout=cfg.workload_timeout)
