"""Before a gce run creates anything: does the project have what the 2017 job needs?

Read-only gcloud calls, each a `Step` (printed by `--dry-run`, run by
`bisector doctor` and by the backend before each base cluster):

* the region's quotas (`gcloud compute regions describe`): CPUS, IN_USE_ADDRESSES,
  STATIC_ADDRESSES, DISKS_TOTAL_GB (pd-standard), SSD_TOTAL_GB, against what one
  slot's base cluster and kubemark master take (`needs`); the project's
  (`gcloud compute project-info describe`): CPUS_ALL_REGIONS, NETWORKS;
* the network (`gcloud compute networks describe`): absent is fine (the backend
  creates it in auto mode), custom mode is not;
* the Artifact Registry repository behind the slot's gcr.io host
  (`gcloud artifacts repositories describe`): absent is fine (the backend
  creates it), an API that refuses is not;
* the images the scripts boot (`gcloud compute images describe`);
* the org policies that break the release tars' public ACL
  (`gcloud resource-manager org-policies describe --effective`), and the staging
  bucket's own uniform bucket-level access (`gcloud storage buckets describe`);
* cfssl and cfssljson on the scripts' PATH (their 2017 download is gone).

A shortfall is one line with the numbers and the fix. A check that cannot be
read (no permission, an API off) is said as such and does not stop a run: only
what is known to be short does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bisector import proc
from bisector.backends.gce import capacity as gce_capacity
from bisector.backends.gce.steps import GceSettings
from bisector.backends.steps import Step, run_step, step

# Defaults of the 2017 scripts the needs depend on (kubernetes 7043372 and 1444d25):
# cluster/gce/config-default.sh NODE_DISK_SIZE (100GB, pd-standard), MASTER_DISK_SIZE (20GB,
# pd-ssd), MASTER_SIZE (n1-standard-$(get-master-size), config-common.sh); cluster/gce/util.sh
# get-master-root-disk-size (20 GB up to 1000 nodes, else 50; pd-standard);
# cluster/kubemark/gce/config-default.sh MASTER_ROOT_DISK_SIZE (KUBEMARK_MASTER_ROOT_DISK_SIZE,
# 10GB) and MASTER_DISK_SIZE (20GB); test/kubemark/gce/util.sh creates the kubemark master's
# pd and, with EVENT_PD=true, an event pd of MASTER_DISK_SIZE each.
NODE_DISK_GB = 100
MASTER_DISK_GB = 20
KUBEMARK_ROOT_DISK_GB = 10
# The image every role boots at both commits (config-default.sh GCI_VERSION, the kubemark
# MASTER_IMAGE), in cos-cloud (start-kubemark uses cos-cloud for `cos*` images).
GCI_VERSION = "cos-beta-59-9460-20-0"
IMAGE_PROJECT = "cos-cloud"
# cluster/gce/util.sh set-preferred-region: the staging bucket's location by zone.
_STAGING_LOCATION = {"asia": "asia", "europe": "eu"}
# Boolean org policies under which kube-up.sh's `gsutil acl ch -g all:R` (copy-to-staging)
# fails, and with it kube-up.sh (errexit); the 2017 nodes download the tars without
# credentials (cluster/gce/gci/configure.sh download-or-bust: plain curl), so they must be
# public.
ORG_POLICIES = ("storage.uniformBucketLevelAccess", "storage.publicAccessPrevention")


def master_size(num_nodes: int) -> str:
    """cluster/gce/config-common.sh get-master-size, for a base cluster of `num_nodes`."""
    for limit, size in ((5, 1), (10, 2), (100, 4), (250, 8), (500, 16)):
        if num_nodes <= limit:
            return f"n1-standard-{size}"
    return "n1-standard-32"


def _gb(text: str) -> int:
    digits = "".join(c for c in text if c.isdigit())
    return int(digits or 0) * (1024 if text.upper().rstrip("B").endswith("T") else 1)


@dataclass(frozen=True)
class Needs:
    """What one slot (a base cluster and a kubemark master) takes from the region."""

    cpus: float
    in_use_addresses: float
    static_addresses: float
    standard_gb: float
    ssd_gb: float

    def regional(self) -> dict[str, float]:
        return {
            "CPUS": self.cpus,
            "IN_USE_ADDRESSES": self.in_use_addresses,
            "STATIC_ADDRESSES": self.static_addresses,
            "DISKS_TOTAL_GB": self.standard_gb,
            "SSD_TOTAL_GB": self.ssd_gb,
        }


def needs(cfg: GceSettings) -> Needs:
    env = cfg.env
    base_master = cfg.master_size or master_size(cfg.num_nodes)
    cpus = sum(
        gce_capacity.machine(t, "gce").millicpu / 1000 * n
        for t, n in (
            (cfg.node_size, cfg.num_nodes),
            (base_master, 1),
            (cfg.kubemark_master_size, 1),
        )
    )
    node_disk = _gb(env.get("NODE_DISK_SIZE", f"{NODE_DISK_GB}GB"))
    master_disk = _gb(env.get("MASTER_DISK_SIZE", f"{MASTER_DISK_GB}GB"))
    base_root = 20 if cfg.num_nodes <= 1000 else 50
    kubemark_root = _gb(env.get("KUBEMARK_MASTER_ROOT_DISK_SIZE", f"{KUBEMARK_ROOT_DISK_GB}GB"))
    event_pd = master_disk if env.get("EVENT_PD") == "true" else 0
    nodes_gb = float(cfg.num_nodes * node_disk)
    standard = float(base_root + kubemark_root)
    ssd = 0.0
    if env.get("NODE_DISK_TYPE", "pd-standard") == "pd-ssd":
        ssd += nodes_gb
    else:
        standard += nodes_gb
    return Needs(
        cpus=cpus,
        in_use_addresses=float(cfg.num_nodes + 2),  # every node and both masters
        static_addresses=2.0,  # ${MASTER_NAME}-ip of both masters
        standard_gb=float(standard),
        ssd_gb=ssd + master_disk * 2 + event_pd,  # both masters' pd, the event pd
    )


def staging_bucket(project: str) -> str:
    """cluster/gce/util.sh upload-server-tars: gs://kubernetes-staging-<md5(project)[:10]>."""
    return "kubernetes-staging-" + hashlib.md5(project.encode()).hexdigest()[:10]


def staging_location(zone: str) -> str:
    return _STAGING_LOCATION.get(zone.split("-", 1)[0], "us")


def images(cfg: GceSettings) -> list[tuple[str, str]]:
    """(project, image) of every image the scripts boot: env overrides, else the 2017 one."""
    env = cfg.env
    gci = env.get("KUBE_GCI_VERSION", GCI_VERSION)
    found = {
        (env.get("KUBE_GCE_MASTER_PROJECT", IMAGE_PROJECT), env.get("KUBE_GCE_MASTER_IMAGE", gci)),
        (env.get("KUBE_GCE_NODE_PROJECT", IMAGE_PROJECT), env.get("KUBE_GCE_NODE_IMAGE", gci)),
    }
    return sorted(found)


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    detail: str
    known: bool = True  # False: could not be read; said, but never stops a run


Runner = Callable[[Step], proc.CmdResult]


def _run(s: Step) -> proc.CmdResult:
    return run_step(s, check=False)


def _json(result: proc.CmdResult) -> dict[str, Any] | None:
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _why(result: proc.CmdResult) -> str:
    text = (result.stderr or result.stdout).strip().splitlines()
    return text[-1][:200] if text else f"exit {result.code}"


def region_step(cfg: GceSettings) -> Step:
    return step(
        "gcloud",
        "compute",
        "regions",
        "describe",
        cfg.region,
        "--project",
        cfg.project,
        "--format=json",
        timeout=60,
    )


def project_step(cfg: GceSettings) -> Step:
    return step(
        "gcloud",
        "compute",
        "project-info",
        "describe",
        "--project",
        cfg.project,
        "--format=json",
        timeout=60,
    )


def network_step(cfg: GceSettings, network: str) -> Step:
    return step(
        "gcloud",
        "compute",
        "networks",
        "describe",
        network,
        "--project",
        cfg.project,
        "--format=json",
        timeout=60,
    )


def repository_step(cfg: GceSettings, host: str, location: str) -> Step:
    return step(
        "gcloud",
        "artifacts",
        "repositories",
        "describe",
        host,
        "--location",
        location,
        "--project",
        cfg.project,
        "--format=json",
        timeout=60,
    )


def image_step(project: str, image: str) -> Step:
    return step(
        "gcloud",
        "compute",
        "images",
        "describe",
        image,
        "--project",
        project,
        "--format=value(name)",
        timeout=60,
    )


def policy_step(cfg: GceSettings, constraint: str) -> Step:
    return step(
        "gcloud",
        "resource-manager",
        "org-policies",
        "describe",
        constraint,
        "--project",
        cfg.project,
        "--effective",
        "--format=json",
        timeout=60,
    )


def bucket_step(cfg: GceSettings) -> Step:
    return step(
        "gcloud",
        "storage",
        "buckets",
        "describe",
        f"gs://{staging_bucket(cfg.project)}",
        "--format=json",
        timeout=60,
    )


def steps(
    cfg: GceSettings, network: str, host: str, location: str, path: str | None = None
) -> list[Step]:
    """Every read the preflight makes, in order (for --dry-run)."""
    return [
        network_step(cfg, network),
        region_step(cfg),
        project_step(cfg),
        repository_step(cfg, host, location),
        *(image_step(p, i) for p, i in images(cfg)),
        *(policy_step(cfg, c) for c in ORG_POLICIES),
        bucket_step(cfg),
        cfssl_step(path),
    ]


# What lowers each need (the config's keys and the scripts' env it reads).
_LOWER = {
    "CPUS": "lower num_nodes, node_size or kubemark_master_size",
    "CPUS_ALL_REGIONS": "lower num_nodes, node_size or kubemark_master_size",
    "IN_USE_ADDRESSES": "lower num_nodes",
    "STATIC_ADDRESSES": "release unused static addresses (gcloud compute addresses list)",
    "DISKS_TOTAL_GB": "lower num_nodes or NODE_DISK_SIZE in [backends.gce.env]",
    "SSD_TOTAL_GB": "lower MASTER_DISK_SIZE in [backends.gce.env] or drop EVENT_PD",
    "NETWORKS": "delete an unused network, or name an existing auto-mode one in `network`",
}


def _quota_fix(cfg: GceSettings, metric: str, scope: str) -> str:
    return (
        f"ask for more {metric} (https://console.cloud.google.com/iam-admin/quotas?project="
        f"{cfg.project}, {scope}), or {_LOWER.get(metric, 'lower what the config asks for')}"
    )


def quotas(cfg: GceSettings, new_network: bool, run: Runner = _run) -> list[Finding]:
    want = needs(cfg)
    found: list[Finding] = []
    result = run(region_step(cfg))
    data = _json(result) if result.code == 0 else None
    if data is None:
        what = f"quotas of {cfg.region}"
        return [Finding(False, what, f"could not be read ({_why(result)})", known=False)]
    limits = {q.get("metric"): q for q in data.get("quotas", []) if isinstance(q, dict)}
    for metric, amount in want.regional().items():
        quota = limits.get(metric)
        if quota is None or not amount:
            continue
        free = float(quota.get("limit", 0)) - float(quota.get("usage", 0))
        line = (
            f"need {amount:,.0f}, limit {float(quota.get('limit', 0)):,.0f}, "
            f"in use {float(quota.get('usage', 0)):,.0f}"
        )
        what = f"quota {metric} in {cfg.region}"
        if amount > free:
            short = amount - free
            found.append(
                Finding(
                    False,
                    what,
                    f"{line}: {short:,.0f} short; "
                    + _quota_fix(cfg, metric, f"region {cfg.region}"),
                )
            )
        else:
            found.append(Finding(True, what, line))
    result = run(project_step(cfg))
    data = _json(result) if result.code == 0 else None
    if data is None:
        return [*found, Finding(False, "project quotas", f"could not be read ({_why(result)})",
                                known=False)]  # fmt: skip
    limits = {q.get("metric"): q for q in data.get("quotas", []) if isinstance(q, dict)}
    for metric, amount in (("CPUS_ALL_REGIONS", want.cpus), ("NETWORKS", float(new_network))):
        quota = limits.get(metric)
        if quota is None or not amount:
            continue
        free = float(quota.get("limit", 0)) - float(quota.get("usage", 0))
        line = (
            f"need {amount:,.0f}, limit {float(quota.get('limit', 0)):,.0f}, "
            f"in use {float(quota.get('usage', 0)):,.0f}"
        )
        if amount > free:
            found.append(
                Finding(
                    False,
                    f"quota {metric}",
                    f"{line}: {amount - free:,.0f} short; "
                    + _quota_fix(cfg, metric, "project-wide"),
                )
            )
        else:
            found.append(Finding(True, f"quota {metric}", line))
    return found


def network(cfg: GceSettings, name: str, run: Runner = _run) -> tuple[Finding, bool]:
    """(the finding, whether the network exists)."""
    result = run(network_step(cfg, name))
    if result.code != 0:
        if "was not found" in result.stderr:
            return Finding(
                True,
                f"network {name}",
                "absent; created in auto mode before "
                "kube-up.sh (gcloud compute networks create --subnet-mode=auto)",
            ), False
        return Finding(False, f"network {name}", f"could not be read ({_why(result)})",
                       known=False), False  # fmt: skip
    data = _json(result) or {}
    if data.get("autoCreateSubnetworks") is False:
        return Finding(False, f"network {name}", "is a custom-mode network: the 2017 scripts "
                       "create no subnet and need an auto-mode one; name another `network` or "
                       "leave it unset"), True  # fmt: skip
    return Finding(True, f"network {name}", "exists"), True


def repository(
    cfg: GceSettings, host: str, location: str, run: Runner = _run
) -> tuple[Finding, bool]:
    what = f"Artifact Registry repository {host} ({location})"
    result = run(repository_step(cfg, host, location))
    if result.code == 0:
        return Finding(True, what, f"exists: {host}/{cfg.project}/kubemark is pushed there"), True
    if "NOT_FOUND" in result.stderr or "not found" in result.stderr.lower():
        return Finding(True, what, "absent; created before start-kubemark.sh pushes the "
                       "hollow-node image (Container Registry takes no pushes since "
                       "2025-03-18)"), False  # fmt: skip
    return Finding(False, what, f"cannot be read ({_why(result)}); enable the API: "
                   f"gcloud services enable artifactregistry.googleapis.com --project "
                   f"{cfg.project}"), False  # fmt: skip


def image_findings(cfg: GceSettings, run: Runner = _run) -> list[Finding]:
    found = []
    for project, image in images(cfg):
        result = run(image_step(project, image))
        what = f"image {project}/{image}"
        if result.code == 0:
            found.append(Finding(True, what, "exists"))
        elif "was not found" in result.stderr:
            found.append(
                Finding(
                    False,
                    what,
                    "does not exist any more: the 2017 scripts boot "
                    "it (cluster/gce/config-default.sh GCI_VERSION); set "
                    "KUBE_GCI_VERSION (or KUBE_GCE_MASTER_IMAGE/KUBE_GCE_NODE_IMAGE)"
                    " in [backends.gce.env] to an image that runs a 2017 kubelet "
                    "(docs/gce-2026.md)",
                )
            )
        else:
            found.append(Finding(False, what, f"could not be read ({_why(result)})", known=False))
    return found


def policy_findings(cfg: GceSettings, run: Runner = _run) -> list[Finding]:
    found = []
    for constraint in ORG_POLICIES:
        result = run(policy_step(cfg, constraint))
        data = _json(result) if result.code == 0 else None
        what = f"org policy {constraint}"
        if data is None:
            found.append(Finding(False, what, f"could not be read ({_why(result)})", known=False))
            continue
        enforced = bool((data.get("booleanPolicy") or {}).get("enforced"))
        if enforced:
            found.append(
                Finding(
                    False,
                    what,
                    "enforced: kube-up.sh makes the release tars "
                    "public (gsutil acl ch -g all:R, under errexit) because the 2017"
                    " nodes download them without credentials; ask for an exception "
                    "for this project: gcloud resource-manager org-policies "
                    f"disable-enforce {constraint} --project {cfg.project}",
                )
            )
        else:
            found.append(Finding(True, what, "not enforced"))
    return found


def bucket_finding(cfg: GceSettings, run: Runner = _run) -> Finding:
    bucket = staging_bucket(cfg.project)
    what = f"staging bucket gs://{bucket}"
    result = run(bucket_step(cfg))
    if result.code != 0:
        if "404" in result.stderr or "not found" in result.stderr.lower():
            return Finding(
                True,
                what,
                "absent; created with fine-grained ACLs before kube-up.sh (gsutil mb -b off)",
            )
        return Finding(False, what, f"could not be read ({_why(result)})", known=False)
    data = _json(result) or {}
    if data.get("uniform_bucket_level_access"):
        return Finding(
            False,
            what,
            "has uniform bucket-level access: kube-up.sh's `gsutil acl ch "
            "-g all:R` fails on it; turn it off (gsutil ubla set off "
            f"gs://{bucket}) or delete the bucket (gsutil rm -r gs://{bucket})",
        )
    return Finding(True, what, "exists with fine-grained ACLs")


def cfssl_step(path: str | None = None) -> Step:
    """Are cfssl and cfssljson where the scripts look first (their PATH)?"""
    env = {"PATH": path} if path is not None else {}
    return step("sh", "-c", "command -v cfssl && command -v cfssljson", env=env, timeout=30)


def cfssl_finding(path: str | None = None, run: Runner = _run) -> Finding:
    result = run(cfssl_step(path))
    if result.code != 0:
        found = result.stdout.split()
        missing = [t for t in ("cfssl", "cfssljson") if not any(f.endswith(t) for f in found)]
        return Finding(
            False,
            "cfssl",
            f"{' and '.join(missing)} not on PATH: the 2017 scripts download them from "
            "pkg.cfssl.org/R1.2, which is gone (kubernetes #97929), and would run the error "
            "page; install cfssl and cfssljson (e.g. `go install "
            "github.com/cloudflare/cfssl/cmd/...@v1.6.5`)",
        )
    return Finding(True, "cfssl", "cfssl and cfssljson on PATH")


@dataclass(frozen=True)
class Ready:
    """The preflight's findings, and what already exists (the rest the backend creates)."""

    findings: list[Finding]
    network: bool
    repository: bool
    bucket: bool


def check(
    cfg: GceSettings, network_name: str, host: str, location: str, *, path: str | None = None,
    run: Runner = _run,
) -> Ready:  # fmt: skip
    """Every read of the preflight, in the order of `steps`."""
    net, net_exists = network(cfg, network_name, run)
    found = quotas(cfg, new_network=not net_exists, run=run)
    repo, repo_exists = repository(cfg, host, location, run)
    found += [net, repo, *image_findings(cfg, run), *policy_findings(cfg, run)]
    bucket = bucket_finding(cfg, run)
    found += [bucket, cfssl_finding(path, run)]
    bucket_exists = bucket.ok and bucket.detail.startswith("exists")
    return Ready(found, net_exists, repo_exists, bucket_exists)
