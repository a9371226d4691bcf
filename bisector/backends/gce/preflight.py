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

A shortfall is one line with the numbers and the fix. A read that fails is said
for what gcloud's own answer shows (`answer_of`), and only with a fix that answer
supports: permission denied, an API disabled, a quota exhausted, no such project,
credentials refused are the project's or the config's to fix (the run is refused,
exit 2 for a nightly); no answer at all (a network cut, an outage, a timeout, a
5xx) or one bisector does not know is no fact about the project: an infrastructure
failure tonight, said with gcloud's words and no fix (`refuse`). The org-policy
reads are this check's alone (kube-up needs no such permission): refused, they
are said and do not stop a run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bisector import proc
from bisector.backends.gce import capacity as gce_capacity
from bisector.backends.gce.steps import GceSettings
from bisector.backends.steps import Step, run_step, step
from bisector.errors import ConfigError, LaunchError

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
    # No answer from the project (unreachable, or an answer bisector does not know): an
    # infrastructure failure, said without a fix; it stops the run as one (`refuse`).
    infra: bool = False


Runner = Callable[[Step], proc.CmdResult]


def _run(s: Step) -> proc.CmdResult:
    try:
        return run_step(s, check=False)
    except proc.CommandError as exc:  # timed out, or gcloud could not be started
        return proc.CmdResult(-1, exc.stdout, f"{exc.stderr}\n{exc.why}".strip())


# Who answered a failed read, from what gcloud printed. The texts are gcloud's own (the
# Cloud SDK's lib/googlecloudsdk: api_lib/util/apis.py API_ENABLEMENT_REGEX, the server's
# "has not been used in project ... or it is disabled"; core/exceptions.py
# NetworkIssueError, "This may be due to network connectivity issues", which gcloud also
# appends to a 429, so a quota is looked for first; calliope/exceptions.py, the socket
# errnos it calls network issues; core/credentials/exceptions.py TokenRefreshError;
# command_lib/crash_handling.py "gcloud crashed (ConnectionError): ...") and the servers'
# (compute's "Required 'compute.regions.get' permission for ...", "Quota exceeded for quota
# metric ... and limit ..."). tests/helpers/gcloud_answers.py quotes each.
DENIED = "permission denied"
DISABLED = "API disabled"
QUOTA = "quota exhausted"
NO_PROJECT = "no such project"
NOT_FOUND = "not found"
CREDENTIALS = "credentials refused"
NO_GCLOUD = "gcloud could not be started"
UNREACHABLE = "no answer from Google Cloud"
UNKNOWN = "an answer bisector does not know"

_DISABLED = re.compile(
    r"has not been used in project \S+ before or it is disabled|SERVICE_DISABLED|"
    r"accessNotConfigured|API \[[\w.-]+\] not enabled on project"
)
_SERVICE = re.compile(r"\b([a-z][a-z0-9-]*\.googleapis\.com)\b")
_QUOTA = re.compile(
    r"Quota exceeded|Quota '[^']+' exceeded|RESOURCE_EXHAUSTED|RATE_LIMIT_EXCEEDED|"
    r"rateLimitExceeded|quotaExceeded"
)
_QUOTA_LIMIT = re.compile(r"limit '([^']+)' of service '([^']+)'")
_NO_PROJECT = re.compile(r"Failed to find project|The resource 'projects/[^/']+' was not found")
_NOT_FOUND = re.compile(r"The resource '[^']+' was not found")
_DENIED = re.compile(
    r"PERMISSION_DENIED|Required '[\w.]+' permission|Permission '[\w.]+' denied|"
    r"does not have permission|does not have [\w.]+ access|\b403\b.*Forbidden|forbidden\b"
)
_PERMISSION = re.compile(
    r"Required '([\w.]+)' permission|Permission '([\w.]+)' denied|does not have ([\w.]+) access"
)
_UNREACHABLE = re.compile(
    r"network connectivity issues|Unable to find the server|Failed to establish a new "
    r"connection|Name or service not known|Temporary failure in name resolution|"
    r"nodename nor servname|Network is unreachable|No route to host|Connection refused|"
    r"Connection reset|Connection aborted|RemoteDisconnected|Max retries exceeded|"
    r"timed out|ConnectionError|SSLError|EOF occurred in violation of protocol|"
    r"\b5\d\d (?:Server Error|Service Unavailable|Bad Gateway|Gateway Timeout)|"
    r"'status': '5\d\d'|HTTPError 5\d\d|Error 5\d\d|backendError|Internal error|"
    r"\bUNAVAILABLE\b|DEADLINE_EXCEEDED|currently unavailable|temporary error"
)
_CREDENTIALS = re.compile(
    r"refreshing (?:your current )?auth tokens|You do not currently have an active account|"
    r"invalid_grant|Reauthentication|reauthenticat"
)
_SAID_CHARS = 300


@dataclass(frozen=True)
class Answer:
    """What gcloud's failed read shows: who refused it, in gcloud's words, and the fix
    those words support (None: no answer of the project's, so no fix to give)."""

    kind: str
    said: str
    fix: str | None

    @property
    def text(self) -> str:
        head = f"{self.kind}: {self.fix}" if self.fix else self.kind
        return f"{head} (gcloud: {self.said})"


def gcloud_said(result: proc.CmdResult) -> str:
    """gcloud's error on one line: from its first `ERROR:` line to the blank line after it
    (a permission or a quota is named on the lines under "Could not fetch resource:"),
    else the last line it printed. The advice after a crash ("gcloud feedback") is left."""
    lines = (result.stderr or result.stdout).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("ERROR:")), None)
    if start is None:
        kept = [line.strip() for line in lines if line.strip()][-1:]
    else:
        kept = []
        for line in lines[start:]:
            if not line.strip():
                break
            kept.append(line.strip())
    text = " ".join(kept) or f"exit {result.code}"
    if len(text) <= _SAID_CHARS:
        return text
    # The command comes first and the cause last (a crash's errno, a quota's limit).
    head = _SAID_CHARS // 3
    return f"{text[:head]} … {text[-(_SAID_CHARS - head - 3) :]}"


def answer_of(result: proc.CmdResult, project: str) -> Answer:
    """Who answered a failed gcloud read, and the fix gcloud's words support."""
    text = f"{result.stderr}\n{result.stdout}"
    said = gcloud_said(result)
    if result.code == -1 and "could not start" in text:
        return Answer(NO_GCLOUD, said, "install the Google Cloud CLI and put gcloud on PATH")
    if disabled := _DISABLED.search(text):
        service = _SERVICE.search(text, disabled.start())
        fix = f"enable the API gcloud names in project {project}"
        if service:
            fix = f"gcloud services enable {service.group(1)} --project {project}"
        return Answer(DISABLED, said, fix)
    if _QUOTA.search(text):
        limit = _QUOTA_LIMIT.search(text)
        which = f" ({limit.group(1)} of {limit.group(2)})" if limit else ""
        page = f"https://console.cloud.google.com/iam-admin/quotas?project={project}"
        return Answer(QUOTA, said, f"raise the limit{which}: {page}")
    if _NO_PROJECT.search(text):
        return Answer(NO_PROJECT, said, f"check `project` ({project}) in [backends.gce]")
    if _NOT_FOUND.search(text):  # e.g. the region of a misspelt zone
        return Answer(NOT_FOUND, said, "check `project` and `zone` in [backends.gce]")
    if _DENIED.search(text):
        named = _PERMISSION.search(text)
        permission = next((g for g in named.groups() if g), "") if named else ""
        held = f"a role that holds {permission} on" if permission else "access to"
        return Answer(DENIED, said, f"grant the account gcloud runs as {held} project {project}")
    if _UNREACHABLE.search(text):
        return Answer(UNREACHABLE, said, None)
    if _CREDENTIALS.search(text):
        login = "gcloud auth login, or gcloud auth activate-service-account"
        return Answer(CREDENTIALS, said, f"log gcloud in again as the run's account ({login})")
    return Answer(UNKNOWN, said, None)


def _unread(cfg: GceSettings, what: str, result: proc.CmdResult, *, needed: bool = True) -> Finding:
    """A read that failed, said for what gcloud's answer shows. `needed`: the backend
    acts on this read's answer (what to create, whether it fits); a read only this check
    makes (the org policies) is said whatever refused it and never stops a run."""
    if result.code == 0:  # it succeeded, but its output is not the JSON asked for
        return Finding(False, what, "gcloud answered without the JSON asked for", known=False)
    answer = answer_of(result, cfg.project)
    if not needed and answer.kind != UNREACHABLE:
        return Finding(False, what, answer.text, known=False)
    return Finding(False, what, answer.text, infra=answer.fix is None)


def refuse(project: str, ready: Ready) -> None:
    """Raise what the findings say, before anything is created: a known shortfall or a
    refusal with its fix (ConfigError), else no answer from the project (LaunchError:
    an infrastructure failure, reported, never a config error)."""
    short = [f for f in ready.findings if not f.ok and f.known and not f.infra]
    if short:
        lines = "; ".join(f"{f.what}: {f.detail}" for f in short)
        raise ConfigError(
            f"project {project} cannot run this config (nothing was created): {lines}"
        )
    failed = [f for f in ready.findings if f.infra]
    if failed:
        more = f" (and {len(failed) - 1} more read(s) failed too)" if len(failed) > 1 else ""
        raise LaunchError(
            f"project {project} could not be read, so nothing was created: "
            f"{failed[0].what}: {failed[0].detail}{more}"
        )


def _json(result: proc.CmdResult) -> dict[str, Any] | None:
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


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
        return [_unread(cfg, f"quotas of {cfg.region}", result)]
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
        return [*found, _unread(cfg, "project quotas", result)]
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
        return _unread(cfg, f"network {name}", result), False
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
    return _unread(cfg, what, result), False


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
            found.append(_unread(cfg, what, result))
    return found


def policy_findings(cfg: GceSettings, run: Runner = _run) -> list[Finding]:
    found = []
    for constraint in ORG_POLICIES:
        result = run(policy_step(cfg, constraint))
        data = _json(result) if result.code == 0 else None
        what = f"org policy {constraint}"
        if data is None:
            found.append(_unread(cfg, what, result, needed=False))
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
        return _unread(cfg, what, result)
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
