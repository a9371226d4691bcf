"""The `gce` backend's settings (`[backends.gce]`), every key declared once.

Defaults: the June 2017 scale job (test-infra f57ef50d,
jobs/ci-kubernetes-kubemark-gce-scale.env). Whether the base cluster can hold the hollow
nodes is checked with the settings (gce/capacity.py), before anything is created.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisector.backends.gce import capacity as gce_capacity
from bisector.backends.steps import RetryPolicy
from bisector.config import Section, keys_of, read_settings, setting
from bisector.errors import ConfigError

# Example values of the shipped configs that are not a GCP project.
PLACEHOLDER_PROJECTS = frozenset({"my-gcp-project", "my-project", "your-project", "project-id"})

# Env the backend sets from its own keys; `[backends.gce.env]` may not override them
# (a second, silent way to set e.g. NUM_NODES would bypass the capacity check).
MANAGED_ENV = {
    "KUBERNETES_PROVIDER": "(always gce)",
    "PROJECT": "project",
    "KUBE_GCE_ZONE": "zone",
    "KUBE_GCE_NETWORK": "network",
    "KUBECONFIG": "(one per slot under the run directory)",
    "KUBE_GCE_INSTANCE_PREFIX": "base_instance_prefix / instance_prefix",
    "INSTANCE_PREFIX": "instance_prefix",
    "NUM_NODES": "num_nodes / kubemark_num_nodes",
    "NODE_SIZE": "node_size",
    "MASTER_SIZE": "master_size / kubemark_master_size",
    "KUBEMARK_NUM_NODES": "kubemark_num_nodes",
    "KUBEMARK_MASTER_SIZE": "kubemark_master_size",
    "API_SERVER_TEST_LOG_LEVEL": "api_server_log_level",
    "CONTAINER_REGISTRY": "(one registry host per slot)",
    "USE_KUBEMARK": "(always true for start/stop-kubemark.sh)",
    "KUBE_DELETE_NETWORK": "(true unless `network` names your own network)",
}


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bisector" / "builds"


def _env(s: Section, key: str) -> dict[str, str]:
    table = s.table(key)
    env = {k: table.get_str(k) for k in table}
    for name in env:
        if name in MANAGED_ENV:
            raise ConfigError(
                f"{table.where(name)}: [{s.path}.env] sets {name}, which the backend sets "
                f"itself; use {MANAGED_ENV[name]} instead"
            )
    return env


def _base_prefix(s: Section, key: str) -> str:
    value = s.get_str(key, s.get_str("instance_prefix", "kubemark"))
    if not value.strip():  # "" names no instance: the base cluster would have no name
        raise ConfigError(f"{s.where(key)} is empty; write a name or leave the key out")
    return value


def _timeout(default: str, doc: str) -> Any:  # a field, as `setting` returns
    return setting("duration", default, doc, above=0, why="every command would fail at once")


@dataclass(frozen=True, kw_only=True)
class GceSettings:
    """`[backends.gce]` (bisector.config.setting); `run_dir` is the run's, not a key."""

    project: str = setting("str", doc="the GCP project")
    zone: str = setting("str", "us-central1-b", "the zone of both clusters")
    network: str | None = setting("str", None, "your own network (else one per slot)")
    num_nodes: int = setting("int", 80, "base cluster nodes", low=1)
    node_size: str = setting("str", "n1-highmem-8", "their machine type")
    master_size: str | None = setting("str", None, "the base master's machine type")
    kubemark_num_nodes: int = setting("int", 5000, "hollow nodes", low=1)
    kubemark_master_size: str = setting("str", "n1-standard-64", "the kubemark master's type")
    instance_prefix: str = setting("str", "kubemark", "names of the kubemark cluster")
    base_instance_prefix: str = setting(
        "str", doc="names of the base cluster (default: instance_prefix)", reader=_base_prefix
    )
    api_server_log_level: str = setting("str", "--v=3", "the apiserver's log level flag")
    env: dict[str, str] = setting("table", doc="[env]: more script variables", reader=_env)
    base_checkout: Path | None = setting("dir", None, "the base cluster's checkout")
    keep_base_cluster: bool = setting("bool", False, "leave the base cluster up after the run")
    instrument_patch: str | None = setting("str", None, "a patch applied to each candidate")
    build_cache_dir: Path = setting("path", default_cache_dir, "built releases, by tree")
    run_dir: Path
    git_timeout: float = _timeout("2m", "one git command")
    build_timeout: float = _timeout("3h", "one build")
    up_timeout: float = _timeout("1h", "kube-up.sh")
    down_timeout: float = _timeout("1h", "kube-down.sh")
    start_timeout: float = _timeout("1h", "start-kubemark.sh")
    stop_timeout: float = _timeout("30m", "stop-kubemark.sh")
    scp_timeout: float = _timeout("30m", "copying the logs")
    # kube-up.sh's wait for its node group (gce_adapt: the gcloud wrapper).
    group_stable_timeout: float = _timeout("15m", "the node group's wait")
    retry_attempts: int = setting("int", 3, "tries of a flaky gcloud step", low=1, high=100)
    retry_initial: float = setting("duration", "30s", "first wait between tries", low=0)
    retry_max: float = setting("duration", "5m", "longest wait between tries", low=0)

    @classmethod
    def from_section(cls, s: Section, run_dir: Path) -> GceSettings:
        cfg = read_settings(cls, s, run_dir=Path(run_dir).absolute())  # scripts run elsewhere
        gce_capacity.check_fits(
            f"{s.file}: [{s.path or 'backends.gce'}]", cfg.num_nodes, cfg.node_size,
            cfg.kubemark_num_nodes, "`kubemark_num_nodes`",
        )  # fmt: skip
        return cfg

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.retry_attempts, self.retry_initial, self.retry_max)

    @property
    def region(self) -> str:
        return self.zone.rsplit("-", 1)[0]

    @property
    def placeholder_project(self) -> bool:
        return self.project in PLACEHOLDER_PROJECTS


KEYS = keys_of(GceSettings)
