"""The 2017 kubemark scripts, made to fit 2026 GCP without editing the checkout.

Each adaptation is a `Step` (or a check) the backend runs around the scripts,
printed by `--dry-run` and listed in the report (`Adaptation`):

* network: cluster/gce/util.sh create-network runs `gcloud compute networks
  create --mode=auto`, which gcloud no longer has (SDK 528: "unrecognized
  arguments: --mode=auto (did you mean '--subnet-mode'?)", exit 2, so kube-up.sh
  stops); it only creates the network when `networks describe` does not find
  it, so the backend creates it first with `--subnet-mode=auto`. kube-down.sh
  deletes it as before (KUBE_DELETE_NETWORK=true for the slot's own network).
* registry: start-kubemark.sh pushes `${CONTAINER_REGISTRY}/${PROJECT}/kubemark`
  with `gcloud docker -- push`; Container Registry takes no pushes since
  2025-03-18 and a gcr.io host is now an Artifact Registry repository named after
  it (gcr.io and us.gcr.io in `us`, eu.gcr.io in `europe`, asia.gcr.io in
  `asia`: cloud.google.com/artifact-registry/docs/transition/gcr-repositories).
  The backend creates the slot's repository when it is missing; the image name,
  and the 2017 kubelets' gcr.io credentials, stay as they were.
* staging bucket: kube-up.sh makes the release tars public with `gsutil acl ch -g
  all:R` under errexit; on a bucket with uniform bucket-level access that fails.
  The backend creates the bucket kube-up.sh would (gs://kubernetes-staging-<hash>,
  location by zone) with fine-grained ACLs (`gsutil mb -b off`) before kube-up.sh
  looks for it; the preflight refuses a project whose org policies forbid it.
* cfssl: hack/lib/util.sh ensure-cfssl downloads cfssl from pkg.cfssl.org/R1.2,
  gone since 2021 (kubernetes #97929); with `curl -s -L` it saves the error page
  as the binary. When cfssl and cfssljson are on PATH it downloads nothing: the
  backend requires them (a check, before anything is created).
* group wait: cluster/gce/util.sh create-nodes runs `gcloud compute
  instance-groups managed wait-until-stable` without --timeout and ignores its
  failure; gcloud waits forever for a group that cannot be completed (quota,
  stockout). kube-up.sh runs with a `gcloud` wrapper first on PATH that adds
  `--timeout` to that one call and, when it times out, stops kube-up.sh saying
  why (validate-cluster.sh would otherwise wait 25 more minutes for the nodes).
* master console: when kube-up.sh says "Cluster failed to initialize" (its
  master never answered within KUBE_CLUSTER_INITIALIZATION_TIMEOUT), the master's
  serial console is saved before kube-down.sh deletes it, and the run says so.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from bisector.backends.gce import preflight as gce_preflight
from bisector.backends.gce import steps as gce_steps
from bisector.backends.gce.steps import GceSettings
from bisector.backends.steps import Step, step
from bisector.report.adaptation import Adaptation

# The Artifact Registry location of each gcr.io host (see the module docstring).
GCR_LOCATIONS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
# What kube-up.sh prints when its master never answers (cluster/gce/util.sh check-cluster).
CLUSTER_FAILED = "Cluster failed to initialize"
# What the gcloud wrapper prints when the node group did not become stable in time.
GROUP_TIMEOUT = "did not become stable within"


def network_create(cfg: GceSettings, slot: int) -> Step:
    return step("gcloud", "compute", "networks", "create", gce_steps.network(cfg, slot),
                "--project", cfg.project, "--subnet-mode=auto", timeout=cfg.up_timeout)  # fmt: skip


def registry_location(slot: int) -> str:
    return GCR_LOCATIONS[gce_steps.registry(slot)]


def repository_create(cfg: GceSettings, slot: int) -> Step:
    host = gce_steps.registry(slot)
    return step("gcloud", "artifacts", "repositories", "create", host,
                "--repository-format=docker", "--location", GCR_LOCATIONS[host],
                "--project", cfg.project, timeout=cfg.up_timeout)  # fmt: skip


def bucket_create(cfg: GceSettings) -> Step:
    return step("gsutil", "mb", "-b", "off", "-p", cfg.project, "-l",
                gce_preflight.staging_location(cfg.zone),
                f"gs://{gce_preflight.staging_bucket(cfg.project)}",
                timeout=cfg.up_timeout)  # fmt: skip


def console_step(cfg: GceSettings, slot: int, into: Path) -> Step:
    """The base master's serial console, kept before kube-down.sh deletes the master."""
    master = f"{gce_steps.base_prefix(cfg, slot)}-master"
    return step("bash", "-c", shlex.join(["gcloud", "compute", "instances",
                "get-serial-port-output", master, "--zone", cfg.zone, "--project", cfg.project])
                + f" > {shlex.quote(str(into))}", timeout=300)  # fmt: skip


def console_path(cfg: GceSettings, slot: int) -> Path:
    return cfg.run_dir / "gce" / f"base-{slot}-master-console.log"


# -- the gcloud wrapper for kube-up.sh -----------------------------------------------------

WRAPPER = """#!/bin/sh
# Written by bisector's gce backend (docs/gce-2026.md): cluster/gce/util.sh create-nodes
# (kubernetes 2017) runs `gcloud compute instance-groups managed wait-until-stable` without
# --timeout and ignores its failure (|| true); gcloud then waits forever for a group that
# cannot be completed (quota, stockout). This adds --timeout={timeout} to that call and, when
# it times out, stops kube-up.sh (its parent) saying why. Every other call goes to the next
# gcloud on PATH unchanged.
self_dir=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
real=""
old_ifs=$IFS
IFS=:
for dir in $PATH; do
  [ "$dir" = "$self_dir" ] && continue
  if [ -x "$dir/gcloud" ]; then real="$dir/gcloud"; break; fi
done
IFS=$old_ifs
if [ -z "$real" ]; then echo "bisector gcloud wrapper: no gcloud on PATH" >&2; exit 127; fi
case " $* " in
  *" wait-until-stable "*)
    case " $* " in *" --timeout"*) exec "$real" "$@" ;; esac
    "$real" "$@" --timeout={timeout} && exit 0
    code=$?
    echo "bisector: the node group {group_hint}{timeout} s (see gcloud compute" \
      "instance-groups managed list-errors); stopping kube-up.sh, which would wait" \
      "25 more minutes for its nodes" >&2
    kill -TERM "$PPID" 2>/dev/null
    exit $code ;;
esac
exec "$real" "$@"
"""


def wrapper_dir(cfg: GceSettings) -> Path:
    return cfg.run_dir / "gce" / "bin"


def write_wrapper(cfg: GceSettings) -> Path:
    directory = wrapper_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "gcloud"
    text = WRAPPER.format(timeout=int(cfg.group_stable_timeout), group_hint=f"{GROUP_TIMEOUT} ")
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def kube_up_path(cfg: GceSettings) -> str:
    """PATH for kube-up.sh: the wrapper first, then the PATH the scripts would have."""
    rest = cfg.env.get("PATH") or os.environ.get("PATH", "")
    return f"{wrapper_dir(cfg)}{os.pathsep}{rest}"


# -- what the report says ------------------------------------------------------------------


def adaptations(cfg: GceSettings, slots: list[int]) -> list[Adaptation]:
    """Every adaptation the backend makes for `slots`, as the report lists them."""
    return [
        Adaptation(
            "network",
            "cluster/gce/util.sh create-network runs `gcloud compute networks create "
            "--mode=auto`, which gcloud 528 refuses; the network is created first with "
            "--subnet-mode=auto (when missing), so kube-up.sh finds it",
            [network_create(cfg, s).render() for s in slots],
        ),
        Adaptation(
            "registry",
            "Container Registry takes no pushes since 2025-03-18: the gcr.io host "
            "start-kubemark.sh pushes the hollow-node image to is an Artifact Registry "
            "repository, created when missing",
            [repository_create(cfg, s).render() for s in slots],
        ),
        Adaptation(
            "staging bucket",
            "kube-up.sh makes the release tars public with `gsutil acl ch -g all:R` under "
            "errexit, which fails with uniform bucket-level access: the bucket is created "
            "with fine-grained ACLs (when missing)",
            [bucket_create(cfg).render()],
        ),
        Adaptation(
            "cfssl",
            "the 2017 download of cfssl (pkg.cfssl.org/R1.2) is gone: cfssl and cfssljson "
            "are required on PATH, where the scripts look first",
            [],
        ),
        Adaptation(
            "group wait",
            "kube-up.sh waits for its node group without a timeout: a gcloud wrapper adds "
            f"--timeout={int(cfg.group_stable_timeout)} to wait-until-stable and stops "
            "kube-up.sh when the group is not complete by then",
            [f"PATH={wrapper_dir(cfg)}:$PATH ./cluster/kube-up.sh"],
        ),
        Adaptation(
            "master console",
            "when kube-up.sh says 'Cluster failed to initialize', the base master's serial "
            "console is kept before kube-down.sh deletes it",
            [console_step(cfg, s, console_path(cfg, s)).render() for s in slots],
        ),
    ]
