"""The `kind` backend's settings (declared once) and the exact commands (as `Step`s) it runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisector.backends.steps import RetryPolicy, Step, step
from bisector.config import Section, keys_of, read_settings, setting
from bisector.errors import ConfigError

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


def _min_version(s: Section, key: str) -> tuple[int, int]:
    version = parse_version(s.get_str(key, "v1.15"))
    if version is None:
        raise ConfigError(f"{s.where(key)}: write a version such as v1.15")
    return version


def _timeout(default: str, doc: str) -> Any:  # a field, as `setting` returns
    return setting("duration", default, doc, above=0, why="every command would fail at once")


@dataclass(frozen=True, kw_only=True)
class KindSettings:
    """`[backends.kind]`: every key declared once (bisector.config.setting)."""

    cluster_name: str = setting("str", "bisector", "kind cluster name (slot N adds -N)")
    node_image_repo: str = setting("str", "kindest/node", "node images built per candidate")
    kubemark_registry: str = setting("str", "bisector", "the kubemark image's name")
    hollow_nodes: int = setting(
        "int", 90, "hollow nodes", low=1, high=5000,
        why="Kubernetes supports clusters of at most 5,000 nodes",
    )  # fmt: skip
    min_version: tuple[int, int] = setting(
        "str", doc="oldest tree kind can run (v1.15)", reader=_min_version
    )
    api_server_verbosity: int = setting("int", 3, "the apiserver's -v", low=0, high=10)
    container_log_max_size: str = setting("str", "1Gi", "the kubelet's log rotation size")
    kind_config: Path | None = setting("file", None, "a kind cluster config")
    instrument_patch: str | None = setting("str", None, "a patch applied to each candidate")
    git_timeout: float = _timeout("2m", "one git command")
    node_image_timeout: float = _timeout("2h", "kind build node-image")
    kubemark_build_timeout: float = _timeout("1h", "the kubemark build")
    create_timeout: float = _timeout("15m", "kind create cluster")
    delete_timeout: float = _timeout("5m", "kind delete cluster")
    kubectl_timeout: float = _timeout("2m", "one kubectl command")
    hollow_ready_timeout: float = _timeout("15m", "hollow nodes Ready")
    logs_timeout: float = _timeout("10m", "copying the logs")
    retry_attempts: int = setting("int", 3, "tries of a flaky step", low=1, high=100)
    retry_initial: float = setting("duration", "10s", "first wait between tries", low=0)
    retry_max: float = setting("duration", "2m", "longest wait between tries", low=0)
    arch: str = setting(
        "str", "amd64", "your docker host's architecture", choices=ARCHES,
        why="the ones kind builds: your docker host's architecture",
    )  # fmt: skip
    workload: str | None = setting("str", None, "a command that is the warmup (clusterloader2)")
    workload_timeout: float = _timeout("3h", "the workload")

    @classmethod
    def from_section(cls, s: Section) -> KindSettings:
        return read_settings(cls, s)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.retry_attempts, self.retry_initial, self.retry_max)


KEYS = keys_of(KindSettings)


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
