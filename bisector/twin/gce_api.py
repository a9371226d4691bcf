"""What the Compute Engine API refuses, as gcloud 528 reports it: the twin's server side.

gcloud checks only the command line itself (bisector.twin.gcloud_args); names,
zones, machine types, images, disk sizes, metadata sizes and firewall ports are
checked by the API, and gcloud prints its answer as

    ERROR: (gcloud.compute.instances.create) Could not fetch resource:
     - <the API's message>

and exits 1 (googlecloudsdk/api_lib/compute/utils.py RaiseException/ConstructList;
images: `Could not fetch image resource:`, api_lib/compute/image_utils.py GetImage).
Measured offline with SDK 528 and a dummy token: none of these values is refused
before the request (the request is what fails without a network), so the twin
answers as the API does. Where each rule and message comes from is said next to it;
docs/gce-2026.md lists the messages whose exact wording could not be checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bisector.backends.gce import capacity as gce_capacity
from bisector.twin.state import Refused

# cloud.google.com/compute/docs/naming-resources: 1-63 characters, RFC 1035,
# `[a-z]([-a-z0-9]*[a-z0-9])?`. The API's message (issues: hashicorp/terraform#20884,
# skypilot-org/skypilot#139, dstackai/dstack#1247) quotes the regex it matches against.
NAME_RE = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")
_NAME_RE_TEXT = "(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)"

# The zones the twin knows (cloud.google.com/compute/docs/regions-zones, the regions the
# 2017 jobs and today's usual choices use); a real project's `gcloud compute zones list`
# is the authority, and `zones` in the twin's settings can add more.
ZONES = {
    "us-central1": "abcf",
    "us-east1": "bcd",
    "us-east4": "abc",
    "us-west1": "abc",
    "us-west2": "abc",
    "europe-west1": "bcd",
    "europe-west2": "abc",
    "europe-west3": "abc",
    "europe-west4": "abc",
    "asia-east1": "abc",
    "asia-northeast1": "abc",
    "asia-southeast1": "abc",
}

# Persistent disk sizes (cloud.google.com/compute/docs/disks/persistent-disks, "Persistent
# Disk: 10 GB to 64 TB" for pd-standard/pd-ssd/pd-balanced).
DISK_MIN_GB = 10
DISK_MAX_GB = 65536
DISK_TYPES = ("pd-standard", "pd-ssd", "pd-balanced")

# Metadata (gcloud 528 `compute instances create --help`, --metadata: "Each metadata key
# must be unique and have a max of 128 bytes in length. Each value must have a max of 256 KB
# in length ... The combined total size for all metadata entries is 512 KB.").
METADATA_KEY_MAX = 128
METADATA_VALUE_MAX = 256 * 1024
METADATA_TOTAL_MAX = 512 * 1024

# TCP/UDP ports are 16-bit (RFC 793/768); the API takes 0-65535 in a firewall rule.
PORT_MAX = 65535

# The default quotas of the twin's project: large enough for the shipped configs, so a
# rehearsal measures the scripts, not a quota. A test project with low quotas sets its own
# in the twin's settings (`quotas`), and `bisector doctor` must catch them.
DEFAULT_REGION_QUOTAS = {
    "CPUS": 2400.0,
    "IN_USE_ADDRESSES": 690.0,
    "STATIC_ADDRESSES": 700.0,
    "DISKS_TOTAL_GB": 409600.0,
    "SSD_TOTAL_GB": 81920.0,
    "INSTANCES": 6000.0,
}
DEFAULT_PROJECT_QUOTAS = {"CPUS_ALL_REGIONS": 2400.0, "NETWORKS": 15.0, "FIREWALLS": 500.0}


def could_not_fetch(command: str, *messages: str, what: str = "resource") -> Refused:
    lines = "".join(f"\n - {m}" for m in messages)
    return Refused(f"ERROR: ({command}) Could not fetch {what}:{lines}")


def check_name(command: str, name: str, field: str = "resource.name") -> None:
    if not NAME_RE.fullmatch(name):
        raise could_not_fetch(
            command,
            f"Invalid value for field '{field}': '{name}'. Must be a match of regex "
            f"'{_NAME_RE_TEXT}'",
        )


def known_zones(settings: dict[str, Any]) -> set[str]:
    zones = {f"{region}-{z}" for region, letters in ZONES.items() for z in letters}
    return zones | set(settings.get("zones", []))


def check_zone(command: str, zone: str, settings: dict[str, Any]) -> None:
    # gcloud 528 first GETs the zone (measured: instances create requests
    # projects/P/zones/Z before anything else); the API answers an unknown one so
    # (issues: zjuul/snowplow-gcloud-installer#1, inspec/inspec-gcp#301).
    if zone not in known_zones(settings):
        raise could_not_fetch(command, f"Invalid value for field 'zone': '{zone}'. Unknown zone.")


def region_of(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def check_region(command: str, region: str, settings: dict[str, Any]) -> None:
    if region not in {region_of(z) for z in known_zones(settings)}:
        raise could_not_fetch(
            command, f"Invalid value for field 'region': '{region}'. Unknown region."
        )


def check_machine_type(command: str, project: str, zone: str, machine_type: str) -> None:
    # The API's message (issues: GoogleCloudPlatform/bank-of-anthos#1234, terratest#1132).
    if not gce_capacity.exists(machine_type):
        url = (
            f"https://compute.googleapis.com/compute/v1/projects/{project}/zones/{zone}/"
            f"machineTypes/{machine_type}"
        )
        raise could_not_fetch(
            command,
            f"Invalid value for field 'resource.machineType': '{url}'. Machine type with name "
            f"'{machine_type}' does not exist in zone '{zone}'.",
        )


def check_image(command: str, image_project: str, image: str, settings: dict[str, Any]) -> None:
    # gcloud resolves --image itself (images.get) before the create request and says
    # `Could not fetch image resource:` (api_lib/compute/image_utils.py); the API's 404 text
    # (issues: terraform-google-container-vm#89, packer-plugin-googlecompute#119).
    images = settings.get("images", {}).get(image_project, [])
    if image not in images:
        raise could_not_fetch(
            command,
            f"The resource 'projects/{image_project}/global/images/{image}' was not found",
            what="image resource",
        )


_SIZE = re.compile(r"^(\d+)\s*([KMGTP]i?B?)?$", re.IGNORECASE)
_UNIT_GB = {"": 1, "K": 2**-20, "M": 2**-10, "G": 1, "T": 2**10, "P": 2**20}


def size_gb(text: str) -> int:
    """gcloud's disk size argument in GB (its BinarySize: GB when no unit, KB..PB in 2^10s)."""
    match = _SIZE.match(text.strip())
    if match is None:
        raise Refused(f"ERROR: (gcloud) invalid disk size [{text}]")
    unit = (match.group(2) or "G")[0].upper()
    return int(int(match.group(1)) * _UNIT_GB[unit])


def check_disk(command: str, size: int, disk_type: str, field: str = "resource.sizeGb") -> None:
    # The API's size limits (DISK_MIN_GB/DISK_MAX_GB above). Its wording for a disk that is
    # too large could not be checked; it follows the API's other "Invalid value for field"
    # answers, with the limit.
    if disk_type not in DISK_TYPES:
        raise could_not_fetch(
            command, f"Invalid value for field 'resource.type': '{disk_type}'. Unknown disk type."
        )
    if size > DISK_MAX_GB:
        raise could_not_fetch(
            command,
            f"Invalid value for field '{field}': '{size}'. Disk size cannot be larger than "
            f"{DISK_MAX_GB} GB.",
        )
    if size < DISK_MIN_GB:
        raise could_not_fetch(
            command,
            f"Invalid value for field '{field}': '{size}'. Disk size cannot be smaller than "
            f"{DISK_MIN_GB} GB.",
        )


def check_metadata(command: str, items: dict[str, str], field: str = "resource.metadata") -> None:
    # The API's answer for a value over the limit, as kubernetes #37180 quotes it for the
    # 2016 limit of 32768 ("Value for field 'resource.properties.metadata.items[2].value' is
    # too large: maximum size 32768 character(s); actual size 33595."); today's limits above.
    total = 0
    for i, (key, value) in enumerate(items.items()):
        if len(key.encode()) > METADATA_KEY_MAX:
            raise could_not_fetch(
                command,
                f"Value for field '{field}.items[{i}].key' is too large: maximum size "
                f"{METADATA_KEY_MAX} character(s); actual size {len(key.encode())}.",
            )
        size = len(value.encode())
        if size > METADATA_VALUE_MAX:
            raise could_not_fetch(
                command,
                f"Value for field '{field}.items[{i}].value' is too large: maximum size "
                f"{METADATA_VALUE_MAX} character(s); actual size {size}.",
            )
        total += size + len(key.encode())
    if total > METADATA_TOTAL_MAX:
        raise could_not_fetch(
            command,
            f"Value for field '{field}' is too large: maximum size {METADATA_TOTAL_MAX} "
            f"character(s); actual size {total}.",
        )


_RULE = re.compile(r"^[a-zA-Z0-9+.-]+(?::(\d+)(?:-(\d+))?)?$")


def check_rules(command: str, specs: list[str]) -> None:
    # gcloud's own form check (googlecloudsdk/api_lib/compute/firewalls_utils.py ParseRules,
    # read for this rule; measured with SDK 528: `--allow tcp:1-x` is refused before any
    # request), then the API's port range (its wording for 99999 could not be checked).
    for i, spec in enumerate(specs):
        match = _RULE.match(spec)
        if match is None:
            raise Refused(
                f"ERROR: ({command}) Firewall rules must be of the form "
                f"PROTOCOL[:PORT[-PORT]]; received [{spec}]."
            )
        for port in (p for p in match.groups() if p is not None):
            if int(port) > PORT_MAX:
                raise could_not_fetch(
                    command,
                    f"Invalid value for field 'resource.allowed[{i}].ports[0]': "
                    f"'{spec.split(':', 1)[1]}'. Invalid port range: ports must be "
                    f"between 0 and {PORT_MAX}.",
                )


# -- quotas ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Demand:
    """What one resource takes from its region's quotas."""

    cpus: float = 0.0
    in_use_addresses: float = 0.0
    static_addresses: float = 0.0
    standard_gb: float = 0.0
    ssd_gb: float = 0.0
    instances: float = 0.0

    def metrics(self) -> dict[str, float]:
        return {
            "CPUS": self.cpus,
            "IN_USE_ADDRESSES": self.in_use_addresses,
            "STATIC_ADDRESSES": self.static_addresses,
            "DISKS_TOTAL_GB": self.standard_gb,
            "SSD_TOTAL_GB": self.ssd_gb,
            "INSTANCES": self.instances,
        }


def region_quotas(settings: dict[str, Any], region: str) -> dict[str, float]:
    limits = dict(DEFAULT_REGION_QUOTAS)
    limits.update(settings.get("quotas", {}).get("regions", {}).get(region, {}))
    return limits


def project_quotas(settings: dict[str, Any]) -> dict[str, float]:
    limits = dict(DEFAULT_PROJECT_QUOTAS)
    limits.update(settings.get("quotas", {}).get("project", {}))
    return limits


def usage(resources: dict[str, dict[str, Any]], region: str) -> dict[str, float]:
    """The region's usage of each quota metric, from what the twin's project holds."""
    total = dict.fromkeys(DEFAULT_REGION_QUOTAS, 0.0)
    for kind in ("instances", "disks", "addresses"):
        for resource in resources.get(kind, {}).values():
            where = resource.get("region") or region_of(str(resource.get("zone", "")))
            if where != region:
                continue
            for metric, amount in demand_of(kind, resource).metrics().items():
                total[metric] += amount
    return total


def demand_of(kind: str, resource: dict[str, Any]) -> Demand:
    if kind == "instances":
        cpus = gce_capacity.machine(resource["machineType"], "twin").millicpu / 1000
        external = bool(resource["networkInterfaces"][0].get("accessConfigs"))
        return Demand(cpus=cpus, in_use_addresses=1.0 if external else 0.0, instances=1.0)
    if kind == "disks":
        gb = float(resource.get("sizeGb", 0))
        if resource.get("type", "pd-standard") == "pd-ssd":
            return Demand(ssd_gb=gb)
        return Demand(standard_gb=gb)
    if kind == "addresses":
        return Demand(static_addresses=1.0)
    return Demand()


def short_quota(
    settings: dict[str, Any], resources: dict[str, dict[str, Any]], region: str, want: Demand
) -> tuple[str, float] | None:
    """The first regional quota `want` would exceed: (metric, limit)."""
    limits = region_quotas(settings, region)
    used = usage(resources, region)
    for metric, amount in want.metrics().items():
        if amount and used[metric] + amount > limits[metric]:
            return metric, limits[metric]
    cpus_all = project_quotas(settings)["CPUS_ALL_REGIONS"]
    regions = {region_of(str(r.get("zone", ""))) for r in resources.get("instances", {}).values()}
    all_cpus = sum(usage(resources, r)["CPUS"] for r in regions | {region})
    if want.cpus and all_cpus + want.cpus > cpus_all:
        return "CPUS_ALL_REGIONS", cpus_all
    return None


def quota_message(metric: str, limit: float, region: str) -> str:
    # The API's answer as gcloud prints it (issues: kelseyhightower/kubernetes-the-hard-way#47,
    # #448; mesosphere-backup/terraform-dcos#61: "Quota 'CPUS' exceeded.  Limit: 8.0 in region
    # us-east1."; fastai/course-v3#165 for a global quota: "... Limit: 0.0 globally.").
    where = "globally" if metric.endswith("_ALL_REGIONS") else f"in region {region}"
    return f"Quota '{metric}' exceeded.  Limit: {limit:.1f} {where}."


def stockout_message(project: str, zone: str) -> str:
    # The API's answer (issues: GoogleCloudPlatform/compute-image-tools#1960,
    # googlefonts/fontbakery-dashboard#81).
    return (
        f"The zone 'projects/{project}/zones/{zone}' does not have enough resources available "
        "to fulfill the request.  Try a different zone, or try again later."
    )


def rate_limit_message(status: int) -> str:
    # The API's answers to too many requests: 429 (RESOURCE_EXHAUSTED) and 403
    # rateLimitExceeded (issues: hashicorp/terraform-provider-google#8360, mxngls/gmail-cleaner#5).
    if status == 429:
        return (
            "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service "
            "'compute.googleapis.com' for consumer 'project_number:000000000000'."
        )
    return (
        "Quota exceeded for quota group 'ReadGroup' and limit 'Read requests per 100 seconds' "
        "of service 'compute.googleapis.com' for consumer 'project_number:000000000000'."
    )
