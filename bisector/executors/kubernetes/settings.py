"""`[executor.kubernetes]`: every key declared once (bisector.config.setting).

Where the Jobs run (a kubeconfig and context, or the pod's own service account when the
driver itself runs in the cluster), what their pods run (the image, its pull policy, the
resources, the service account), where a pod gets the candidate's tree (a git URL, a
shallow fetch of that one commit), where its results come back (its log, or a bucket),
the volume the pods share their build caches on, and how long a pod may wait for a node
or an image before its evaluation is a skip.
"""

from __future__ import annotations

from dataclasses import dataclass

from bisector.config import Section, keys_of, read_settings, setting
from bisector.errors import ConfigError
from bisector.executors.handback import POD_LOG

PULL_POLICIES = ("IfNotPresent", "Always", "Never")
_QUANTITY_KEYS = ("cpu", "memory", "ephemeral-storage")


def _str_table(s: Section, key: str) -> dict[str, str]:
    """A table of strings (`node_selector = { "disk" = "ssd" }`), as written."""
    table = s.table(key)
    out: dict[str, str] = {}
    for name in table:
        value = table.data[name]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{table.where(name)}: expected a non-empty string, got {value!r}")
        out[name] = value
    return out


def _resources(s: Section, key: str) -> dict[str, str]:
    """`requests`/`limits`: cpu, memory, ephemeral-storage as Kubernetes quantities."""
    found = _str_table(s, key)
    unknown = sorted(set(found) - set(_QUANTITY_KEYS))
    if unknown:
        raise ConfigError(
            f"{s.table(key).where(unknown[0])} is not a known resource; expected one of: "
            + ", ".join(_QUANTITY_KEYS)
        )
    return found


def _artifacts(s: Section, key: str) -> str:
    value = s.get_str(key, POD_LOG)
    if value != POD_LOG and not (value.startswith("gs://") and len(value) > len("gs://")):
        raise ConfigError(
            f"{s.where(key)} must be {POD_LOG!r} (the results come back in the pod's log) "
            f"or gs://bucket/prefix, got {value!r}"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class KubernetesSettings:
    """Where and how each evaluation runs as a `batch/v1` Job."""

    kubeconfig: str = setting("str", "", "kubeconfig file (empty: $KUBECONFIG or ~/.kube/config)")
    context: str = setting("str", "", "its context (empty: the current one)")
    in_cluster: bool = setting("bool", False, "the driver runs in a pod: its service account")
    namespace: str = setting("str", "default", "the namespace of the Jobs")
    image: str = setting("str", doc="the image the pods run (`make image`: procs target)")
    image_pull_policy: str = setting(
        "str", "IfNotPresent", "the pods' imagePullPolicy", choices=PULL_POLICIES
    )
    requests: dict[str, str] = setting(
        "table", doc="the pod's resource requests: cpu, memory", reader=_resources
    )
    limits: dict[str, str] = setting(
        "table", doc="the pod's resource limits: cpu, memory", reader=_resources
    )
    node_selector: dict[str, str] = setting(
        "table", doc="the pods' nodeSelector", reader=_str_table
    )
    service_account: str = setting("str", "", "the pods' service account (empty: default)")
    pod_env: dict[str, str] = setting(
        "table", doc="environment of `bisector evaluate` in the pod", reader=_str_table
    )
    parallelism: int = setting(
        "int", 0, "Jobs at once at most (0: one per slot, [search] parallel)", low=0, high=64
    )
    git_url: str = setting("str", doc="the git URL the pods fetch each commit from")
    fetch_depth: int = setting(
        "int", 1, "history fetched with the commit (0: all of it)", low=0, high=1_000_000
    )
    artifacts: str = setting(
        "str", POD_LOG, "where results come back: pod-log or gs://bucket/prefix", reader=_artifacts
    )
    cache_claim: str = setting("str", "", "a PersistentVolumeClaim the pods share for caches")
    cache_host_path: str = setting("str", "", "or a directory on each node for caches")
    cache_mounts: dict[str, str] = setting(
        "table", doc="pod path = subdirectory of the cache volume mounted there",
        reader=_str_table,
    )  # fmt: skip
    dns_nameservers: tuple[str, ...] = setting(
        "str_list", (), "the pods' nameservers (empty: the cluster's DNS; none there: 127.0.0.1)"
    )
    shm_size: str = setting(
        "str", "", "a memory-backed /dev/shm of this size (empty: the runtime's)"
    )
    unschedulable_after: float = setting(
        "duration", "10m", "a pod no node takes for this long is a skip", above=0
    )
    pull_failing_after: float = setting(
        "duration", "2m", "a pod whose image cannot be pulled for this long is a skip", above=0
    )
    setup_failing_after: float = setting(
        "duration", "5m",
        "a pod its node has not set up (sandbox: volumes, network) for this long is a skip",
        above=0,
    )  # fmt: skip
    node_lost_after: float = setting(
        "duration", "2m", "a pod on a node gone NotReady or unreachable this long is a skip",
        low=0,
    )  # fmt: skip
    deadline: float = setting(
        "duration", "3h", "one Job's activeDeadlineSeconds: past it, a skip", low=60
    )
    termination_grace: float = setting(
        "duration", "60s", "the pod's time for its own teardown when deleted", low=0
    )
    delete_wait: float = setting(
        "duration", "3m", "how long a deleted Job may take to be gone", above=0
    )

    @classmethod
    def from_section(cls, s: Section) -> KubernetesSettings:
        cfg = read_settings(cls, s)
        if cfg.cache_claim and cfg.cache_host_path:
            raise ConfigError(
                f"{s.where('cache_claim')} and {s.where('cache_host_path')} are both set; "
                "name one volume for the caches"
            )
        if cfg.cache_mounts and not (cfg.cache_claim or cfg.cache_host_path):
            raise ConfigError(
                f"{s.where('cache_mounts')} needs a volume: set cache_claim (a "
                "PersistentVolumeClaim the pods share) or cache_host_path"
            )
        for path, sub in cfg.cache_mounts.items():
            if not path.startswith("/"):
                raise ConfigError(f"{s.where('cache_mounts')}: {path!r} is not an absolute path")
            if sub.startswith("/") or ".." in sub.split("/"):
                raise ConfigError(
                    f"{s.where('cache_mounts')}: {sub!r} must be a relative path inside the "
                    "volume (no leading /, no ..)"
                )
        return cfg


KEYS = keys_of(KubernetesSettings)
