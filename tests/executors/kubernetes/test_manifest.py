"""The Job of one evaluation: the cache volume's mounts and the pods' nameservers, as the
settings name them (the one-node cluster of docs/jobs-cluster.md has no DNS: a pod that
asks the cluster's nameserver waits for its timeouts on every lookup)."""

from __future__ import annotations

from typing import Any

import pytest

from bisector.config import Section
from bisector.errors import ConfigError
from bisector.executors.kubernetes.manifest import job_for
from bisector.executors.kubernetes.settings import KubernetesSettings
from bisector.executors.spec import EvaluationSpec

BASE = {"image": "localhost/bisector:dev", "git_url": "git://192.0.2.2:9418/k"}


def settings(**extra: Any) -> KubernetesSettings:
    return KubernetesSettings.from_section(
        Section({**BASE, **extra}, "bisector.toml", "executor.kubernetes")
    )


def pod_of(cfg: KubernetesSettings) -> Any:
    spec = EvaluationSpec(commit="a" * 40, tree="b" * 40, git_url=cfg.git_url, config={})
    job = job_for(cfg, spec, "r1", "001-aaaaaaaaaaaa")
    assert job.spec is not None
    return job.spec.template.spec


def test_each_cache_mount_is_its_named_subdirectory_of_the_one_volume() -> None:
    cfg = settings(
        cache_host_path="/var/cache/shared",
        cache_mounts={"/var/cache/go": "go-build", "/var/cache/builds": "builds"},
    )
    pod = pod_of(cfg)
    container = pod.containers[0]
    mounts = {m.mount_path: m.sub_path for m in container.volume_mounts if m.name == "cache"}
    assert mounts == {"/var/cache/go": "go-build", "/var/cache/builds": "builds"}
    (volume,) = [v for v in pod.volumes if v.name == "cache"]
    assert volume.host_path.path == "/var/cache/shared"


@pytest.mark.parametrize(
    ("mounts", "says"),
    [
        ({"var/cache/go": "go"}, "'var/cache/go' is not an absolute path"),
        ({"/var/cache/go": "/go"}, "'/go' must be a relative path inside the volume"),
        ({"/var/cache/go": "a/../../etc"}, "must be a relative path inside the volume"),
    ],
)
def test_a_cache_mount_outside_the_volume_is_one_line(mounts: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match="cache_mounts") as caught:
        settings(cache_host_path="/var/cache/shared", cache_mounts=mounts)
    assert says in str(caught.value)


def test_cache_mounts_without_a_volume_say_which_to_set() -> None:
    with pytest.raises(ConfigError, match="needs a volume: set cache_claim"):
        settings(cache_mounts={"/var/cache/go": "go"})


def test_named_nameservers_replace_the_clusters_dns_and_fail_fast() -> None:
    pod = pod_of(settings(dns_nameservers=["127.0.0.1"]))
    assert pod.dns_policy == "None"
    assert pod.dns_config.nameservers == ["127.0.0.1"]
    assert {(o.name, o.value) for o in pod.dns_config.options} == {
        ("timeout", "1"),
        ("attempts", "1"),
    }


def test_without_nameservers_the_pod_keeps_the_clusters_dns() -> None:
    pod = pod_of(settings())
    assert pod.dns_policy is None
    assert pod.dns_config is None
