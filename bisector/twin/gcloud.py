"""The twin's `gcloud`: as strict as Cloud SDK 528, answering from the twin's state.

Every call is first read as gcloud 528 reads it (bisector.twin.gcloud_args: the
flags each command accepts, from the SDK's own command tree; a call real gcloud
refuses is refused with its message and exit 2). Then the API's side
(bisector.twin.gce_api): resource names, zones and regions, machine types,
images, disk sizes, metadata sizes, firewall ports, the project's quotas, and
the injected faults (bisector.twin.faults): each refused with the API's answer
as gcloud prints it, exit 1.

Each resource kind keeps what the scripts later ask back (an address's IP, an
instance's NAT IP and machine type, a group's instances). Creating what exists
fails as GCE does ("already exists"), describing or deleting what does not
fails with "was not found", so the scripts' own existence checks and retries
run their real paths. `ssh`/`scp` to an instance reach the twin's model of that
VM (a kubemark master receives the server tar, starts its apiserver, and serves
`/var/log/kube-apiserver.log*` from the sim model).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisector.backends.gce import capacity as gce_capacity
from bisector.twin import faults, gce_api, master
from bisector.twin.gcloud_args import Parsed, UsageError, parse
from bisector.twin.query import matches, render
from bisector.twin.state import Home, Refused, TwinState, Unmodelled

Handler = Callable[[TwinState, Parsed], str]


def main(home: Home, argv: list[str]) -> int:
    try:
        args = parse(argv)
    except UsageError as exc:
        raise Refused(str(exc), code=exc.code) from None
    command = args.command
    if command[:1] == ("compute",):
        return _compute(home, args)
    if command in (("config", "list"), ("config", "get")):
        if args.words not in (["project"], ["core/project"]):
            raise Unmodelled(f"gcloud config {command[1]} {' '.join(args.words)}")
        if args.get("--format") not in (None, "value(core.project)"):
            raise Unmodelled(f"--format={args.get('--format')}")
        print(home.settings().get("project", ""))
        return 0
    if command == ("auth", "list"):
        print(home.settings().get("account", "twin@example.com"))
        return 0
    if command == ("version",) and args.get("--format") == "json":
        print('{"Google Cloud SDK": "528.0.0", "alpha": "2025.06.20", '
              '"beta": "2025.06.20", "core": "2025.06.20"}')  # fmt: skip
        return 0
    if command == ("docker",):
        return _docker_push(home, args)
    handler = _OTHER.get(command)
    if handler is None:
        raise Unmodelled("gcloud " + " ".join(command))
    with home.locked() as state:
        _project_check(state, args)
        out = handler(state, args)
    sys.stdout.write(out)
    return 0


# -- compute --------------------------------------------------------------------------


def _compute(home: Home, args: Parsed) -> int:
    words = args.command[1:]
    if words == ("ssh",):
        return _ssh(home, args)
    if words in (("scp",), ("copy-files",)):
        # copy-files: start-kubemark.sh before kubernetes 32bce030d8 (still in SDK 528,
        # deprecated: the same scp, recursive).
        return _scp(home, args, words[0])
    if words == ("instance-groups", "managed", "wait-until-stable"):
        return _group_wait(home, args)
    if words[:2] == ("networks", "subnets"):
        raise Unmodelled("gcloud compute networks subnets (ENABLE_IP_ALIASES)")
    if words[:2] == ("instance-groups", "managed"):
        kind, verb = "instance-groups", words[2]
    else:
        kind, verb = words[0], words[-1]
    if (kind, verb) in (("target-pools", "describe"), ("forwarding-rules", "describe")):
        # The twin never creates these (master replication only): kube-down.sh asks.
        raise _missing(args, kind, args.words[0] if args.words else "?")
    handler = _HANDLERS.get((kind, verb))
    if handler is None:
        raise Unmodelled(f"gcloud compute {' '.join(words)}")
    with home.locked() as state:
        if (kind, verb) != ("images", "describe"):  # public images live in their own projects
            _project_check(state, args)
        faults.before_api_call(state, args.command, _first(args), args.get("--zone") or "")
        out = handler(state, args)
    sys.stdout.write(out)
    return 0


def _first(args: Parsed) -> str:
    return args.words[0] if args.words else ""


def _project(state: TwinState) -> str:
    return str(state.settings.get("project", "twin-project"))


def _project_check(state: TwinState, args: Parsed) -> None:
    want = state.settings.get("project")
    got = args.get("--project")
    if want and got and got != want:
        raise gce_api.could_not_fetch(
            args.name, f"The resource 'projects/{got}' was not found (the twin's project is {want})"
        )


def _missing(args: Parsed, kind: str, name: str) -> Refused:
    collection = {"instance-groups": "instanceGroupManagers", "firewall-rules": "firewalls",
                  "instance-templates": "instanceTemplates", "target-pools": "targetPools",
                  "forwarding-rules": "forwardingRules"}.get(kind, kind)  # fmt: skip
    where = args.get("--zone") or args.get("--region")
    scope = f"zones/{where}/" if args.get("--zone") else f"regions/{where}/" if where else ""
    return gce_api.could_not_fetch(
        args.name,
        f"The resource 'projects/{args.get('--project', 'twin-project')}/{scope}{collection}/"
        f"{name}' was not found",
    )


def _create(kind: str, fields: Callable[[TwinState, str, Parsed], dict[str, Any]]) -> Handler:
    def handler(state: TwinState, args: Parsed) -> str:
        if not args.words:
            raise Refused(f"ERROR: ({args.name}) argument NAME: Must be specified.", code=2)
        table = state.kind(kind)
        for name in args.words:
            gce_api.check_name(args.name, name)
            if name in table:
                raise gce_api.could_not_fetch(args.name, f"The resource '{name}' already exists")
        for name in args.words:
            table[name] = {"name": name, **fields(state, name, args)}
        return f"Created [{kind}/{', '.join(args.words)}].\n"

    return handler


def _describe(kind: str) -> Handler:
    def handler(state: TwinState, args: Parsed) -> str:
        if len(args.words) != 1:
            raise Unmodelled(f"gcloud compute {kind} describe with {len(args.words)} names")
        resource = state.kind(kind).get(args.words[0])
        if resource is None:
            raise _missing(args, kind, args.words[0])
        return render(args.get("--format"), [_public(resource)], single=True)

    return handler


def _public(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource as the API shows it (without the twin's own bookkeeping)."""
    return {k: v for k, v in resource.items() if k not in ("files", "build", "pki", "served")}


def _delete(kind: str) -> Handler:
    def handler(state: TwinState, args: Parsed) -> str:
        table = state.kind(kind)
        for name in args.words:
            if name not in table:
                raise _missing(args, kind, name)
        for name in args.words:
            removed = table.pop(name)
            if kind == "instance-groups":
                for instance in removed.get("instances", []):
                    gone = state.kind("instances").pop(instance, None)
                    if gone is not None:
                        _delete_instance_disks(state, gone)
            if kind == "instances":
                _delete_instance_disks(state, removed, every=args.get("--delete-disks") == "all")
        return f"Deleted [{kind}/{', '.join(args.words)}].\n"

    return handler


def _delete_instance_disks(
    state: TwinState, instance: dict[str, Any], *, every: bool = False
) -> None:
    """Boot disks go with the instance; attached `auto-delete=no` disks stay (as on GCE)
    unless `--delete-disks all` (kube-down.sh deletes its master so)."""
    state.kind("disks").pop(instance["name"], None)
    for disk in instance.get("disks", []):
        if every or disk.get("autoDelete"):
            state.kind("disks").pop(disk["deviceName"], None)


def _list(kind: str) -> Handler:
    def handler(state: TwinState, args: Parsed) -> str:
        regexp = args.get("--regexp")
        zones = args.get("--zones")
        found = [
            _public(r)
            for r in state.kind(kind).values()
            if (not args.words or r["name"] in args.words)
            and matches(r, args.get("--filter"), regexp)
            and (zones is None or "zone" not in r or r["zone"] in zones.split(","))
        ]
        return render(args.get("--format"), sorted(found, key=lambda r: r["name"]), single=False)

    return handler


def _metadata(args: Parsed) -> dict[str, str]:
    """--metadata and --metadata-from-file as the API receives them (files read)."""
    items: dict[str, str] = {}
    for spec in args.flags.get("--metadata-from-file", []):
        for pair in spec.split(","):
            key, _, path = pair.partition("=")
            try:
                items[key] = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                raise Refused(
                    f"ERROR: ({args.name}) Unable to read file [{path}]: [Errno 2] No such file "
                    f"or directory: '{path}'"
                ) from None
    for spec in args.flags.get("--metadata", []):
        for pair in spec.split(","):
            key, _, value = pair.partition("=")
            items[key] = value
    return items


def _boot_disk(state: TwinState, args: Parsed, zone: str, name: str) -> dict[str, Any]:
    size = gce_api.size_gb(args.get("--boot-disk-size") or "10GB")
    disk_type = args.get("--boot-disk-type") or "pd-standard"
    gce_api.check_disk(args.name, size, disk_type, "resource.disks[0].initializeParams.diskSizeGb")
    return {"name": name, "zone": zone, "sizeGb": size, "type": disk_type}


def _check_image(state: TwinState, args: Parsed) -> None:
    image = args.get("--image")
    if image is not None:
        project = args.get("--image-project") or _project(state)
        gce_api.check_image(args.name, project, image, state.settings)


def _instance_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    zone = args.get("--zone")
    if zone is None:
        raise Refused(f"ERROR: ({args.name}) Underspecified resource [{name}]. Specify the "
                      "[--zone] flag.")  # fmt: skip
    gce_api.check_zone(args.name, zone, state.settings)
    machine_type = args.get("--machine-type", "n1-standard-1") or "n1-standard-1"
    gce_api.check_machine_type(args.name, _project(state), zone, machine_type)
    _check_image(state, args)
    boot = _boot_disk(state, args, zone, name)
    gce_api.check_metadata(args.name, _metadata(args))
    disks = []
    for spec in args.flags.get("--disk", []):
        parts = dict(p.split("=", 1) for p in spec.split(","))
        disk = parts.get("name", "")
        if disk not in state.kind("disks"):
            raise _missing(args, "disks", disk)
        disks.append({"deviceName": disk, "autoDelete": parts.get("auto-delete") == "yes"})
    instance = {
        "zone": zone,
        "machineType": machine_type,
        "status": "RUNNING",
        "tags": {"items": (args.get("--tags") or "").split(",")},
        "networkInterfaces": [
            {
                "network": args.get("--network", "default"),
                "accessConfigs": [] if args.has("--no-address") else [
                    {"name": "external-nat", "natIP": args.get("--address") or state.next_ip()}
                ],
            }
        ],
        "disks": disks,
        "metadata": {"items": [{"key": k, "value": v} for k, v in _metadata(args).items()]},
        "files": {},
    }  # fmt: skip
    region = gce_api.region_of(zone)
    _charge(state, args, region, "instances", {"name": name, **instance}, "disks", boot)
    state.kind("disks")[name] = boot
    return instance


def _charge(state: TwinState, args: Parsed, region: str, *pairs: Any) -> None:
    """Refuse a create that would take the region (or project) over a quota."""
    want = gce_api.Demand()
    for kind, resource in zip(pairs[::2], pairs[1::2], strict=True):
        d = gce_api.demand_of(kind, resource)
        want = gce_api.Demand(*(a + b for a, b in zip(
            (want.cpus, want.in_use_addresses, want.static_addresses, want.standard_gb,
             want.ssd_gb, want.instances),
            (d.cpus, d.in_use_addresses, d.static_addresses, d.standard_gb, d.ssd_gb,
             d.instances), strict=True)))  # fmt: skip
    short = gce_api.short_quota(state.settings, state.resources, region, want)
    if short is not None:
        raise gce_api.could_not_fetch(args.name, gce_api.quota_message(*short, region))


def _add_metadata(state: TwinState, args: Parsed) -> str:
    instance = _instance(state, args, args.words)
    items = {item["key"]: item["value"] for item in instance["metadata"]["items"]}
    items.update(_metadata(args))
    gce_api.check_metadata(args.name, items)
    instance["metadata"]["items"] = [{"key": k, "value": v} for k, v in items.items()]
    return f"Updated [instances/{instance['name']}].\n"


def _attach_disk(state: TwinState, args: Parsed) -> str:
    instance = _instance(state, args, args.words)
    disk = args.get("--disk")
    if disk is None:
        raise Refused(f"ERROR: ({args.name}) argument --disk: Must be specified.", code=2)
    if disk not in state.kind("disks"):
        raise _missing(args, "disks", disk)
    instance["disks"].append({"deviceName": disk, "autoDelete": False})
    return f"Updated [instances/{instance['name']}].\n"


def _serial_output(state: TwinState, args: Parsed) -> str:
    instance = _instance(state, args, args.words)
    lines = [f"twin console of {instance['name']}: booted"]
    if faults.unhealthy(state, instance["name"]):
        lines.append("kube-master-installation: the apiserver did not start (injected fault)")
    return "\n".join(lines) + "\n"


def _instance(state: TwinState, args: Parsed, names: list[str]) -> dict[str, Any]:
    if len(names) != 1:
        raise Unmodelled("an instance call without exactly one instance name")
    name = names[0].split("@")[-1]
    instance = state.kind("instances").get(name)
    if instance is None:
        raise _missing(args, "instances", name)
    assert isinstance(instance, dict)
    return instance


def _group_create(state: TwinState, args: Parsed) -> str:
    zone = args.get("--zone") or ""
    gce_api.check_zone(args.name, zone, state.settings)
    template_name = args.get("--template") or ""
    template = state.kind("instance-templates").get(template_name)
    if template is None:
        raise _missing(args, "instance-templates", template_name)
    out = _create("instance-groups", lambda s, n, a: {"zone": zone})(state, args)
    (name,) = args.words
    base = args.get("--base-instance-name") or name
    size = int(args.get("--size") or 0)
    group = state.kind("instance-groups")[name]
    group.update(instanceGroup=name, template=template["name"], targetSize=size, instances=[],
                 errors=[])  # fmt: skip
    creates = faults.group_creates(state, name, size)
    for i in range(size):
        instance_name = f"{base}-{i:04x}"
        instance = {
            "name": instance_name,
            "zone": zone,
            "machineType": template["machineType"],
            "status": "RUNNING",
            "tags": template["tags"],
            "networkInterfaces": [
                {"network": template["network"],
                 "accessConfigs": [{"name": "external-nat", "natIP": "pending"}]}
            ],
            "disks": [], "metadata": {"items": []}, "files": {}, "group": name,
        }  # fmt: skip
        boot = {"name": instance_name, "zone": zone, **template["boot"]}
        # The group's instances are created after the call returns; what the zone or the
        # quotas refuse stays "creating", with its error (list-errors).
        if i >= creates:
            group["errors"].append(gce_api.stockout_message(_project(state), zone))
            continue
        try:
            _charge(state, args, gce_api.region_of(zone), "instances", instance, "disks", boot)
        except Refused as exc:
            group["errors"].append(str(exc).split("\n - ", 1)[-1])
            continue
        instance["networkInterfaces"][0]["accessConfigs"][0]["natIP"] = state.next_ip()
        state.kind("instances")[instance_name] = instance
        state.kind("disks")[instance_name] = boot
        group["instances"].append(instance_name)
    return out


def _group_stable(group: dict[str, Any]) -> bool:
    return len(group["instances"]) >= int(group.get("targetSize", len(group["instances"])))


def _group_wait(home: Home, args: Parsed) -> int:
    """wait-until-stable: at once for a whole group; a group that cannot be completed waits
    until --timeout (then gcloud's TimeoutError, exit 1; the twin does not sleep it), or,
    without --timeout, forever, as gcloud 528 does (api_lib/compute/instance_groups/managed/
    wait_utils.py: no timeout means no limit, a line every 10 s)."""
    name = _first(args)
    while True:
        with home.locked() as state:
            _project_check(state, args)
            group = state.kind("instance-groups").get(name)
            if group is None:
                raise _missing(args, "instance-groups", name)
            stable = _group_stable(group)
            creating = int(group.get("targetSize", 0)) - len(group["instances"])
        if stable:
            print("Group is stable")
            return 0
        print(f"Waiting for group to become stable, current operations: creating: {creating}",
              flush=True)  # fmt: skip
        if args.get("--timeout") is not None:
            raise Refused(f"ERROR: ({args.name}) Timeout while waiting for group to become stable.")
        time.sleep(10)


def _group_instances(state: TwinState, args: Parsed) -> str:
    group = state.kind("instance-groups").get(_first(args))
    if group is None:
        raise _missing(args, "instance-groups", _first(args))
    rows = [{"name": i, "instance": i, "status": "RUNNING"} for i in group["instances"]]
    return render(args.get("--format"), rows, single=False)


def _group_errors(state: TwinState, args: Parsed) -> str:
    group = state.kind("instance-groups").get(_first(args))
    if group is None:
        raise _missing(args, "instance-groups", _first(args))
    rows = [{"name": group["name"], "error": {"message": e}} for e in group["errors"]]
    return render(args.get("--format") or "value(error.message)", rows, single=False)


def _template_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    machine_type = args.get("--machine-type") or "n1-standard-1"
    if not gce_capacity.exists(machine_type):
        raise gce_api.could_not_fetch(
            args.name,
            f"Invalid value for field 'resource.properties.machineType': '{machine_type}'. "
            f"Machine type with name '{machine_type}' does not exist.",
        )
    _check_image(state, args)
    size = gce_api.size_gb(args.get("--boot-disk-size") or "10GB")
    disk_type = args.get("--boot-disk-type") or "pd-standard"
    gce_api.check_disk(
        args.name, size, disk_type, "resource.properties.disks[0].initializeParams.diskSizeGb"
    )
    gce_api.check_metadata(args.name, _metadata(args), "resource.properties.metadata")
    return {
        "machineType": machine_type,
        "tags": {"items": (args.get("--tags") or "").split(",")},
        "network": args.get("--network", "default"),
        "boot": {"sizeGb": size, "type": disk_type},
    }


def _address_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    region = args.get("--region") or ""
    gce_api.check_region(args.name, region, state.settings)
    address = {"region": region, "address": state.next_ip(), "status": "RESERVED"}
    _charge(state, args, region, "addresses", address)
    return address


def _firewall_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    network = args.get("--network") or "default"
    if network not in state.kind("networks") and network != "default":
        raise gce_api.could_not_fetch(
            args.name, f"The resource 'projects/{_project(state)}/global/networks/{network}' "
            "was not found",
        )  # fmt: skip
    rules = [r for spec in args.flags.get("--allow", []) for r in spec.split(",")]
    gce_api.check_rules(args.name, rules)
    limit = gce_api.project_quotas(state.settings)["FIREWALLS"]
    if len(state.kind("firewall-rules")) + 1 > limit:
        raise gce_api.could_not_fetch(args.name, gce_api.quota_message("FIREWALLS", limit, ""))
    return {"network": network, "allowed": args.get("--allow", ""),
            "targetTags": args.get("--target-tags", "")}  # fmt: skip


def _network_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    limit = gce_api.project_quotas(state.settings)["NETWORKS"]
    if len(state.kind("networks")) + 1 > limit:
        raise gce_api.could_not_fetch(args.name, gce_api.quota_message("NETWORKS", limit, ""))
    mode = args.get("--subnet-mode") or "auto"
    return {"x_gcloud_subnet_mode": mode.upper(), "autoCreateSubnetworks": mode == "auto"}


def _disk_fields(state: TwinState, name: str, args: Parsed) -> dict[str, Any]:
    zone = args.get("--zone") or ""
    gce_api.check_zone(args.name, zone, state.settings)
    size = gce_api.size_gb(args.get("--size") or "500GB")
    disk_type = args.get("--type") or "pd-standard"
    gce_api.check_disk(args.name, size, disk_type)
    disk = {"zone": zone, "sizeGb": size, "type": disk_type}
    _charge(state, args, gce_api.region_of(zone), "disks", disk)
    return disk


def _quotas(limits: dict[str, float], used: dict[str, float]) -> list[dict[str, Any]]:
    return [{"metric": m, "limit": limit, "usage": used.get(m, 0.0)} for m, limit in limits.items()]


def _region_describe(state: TwinState, args: Parsed) -> str:
    region = _first(args)
    gce_api.check_region(args.name, region, state.settings)
    resource = {
        "name": region,
        "status": "UP",
        "quotas": _quotas(
            gce_api.region_quotas(state.settings, region), gce_api.usage(state.resources, region)
        ),
    }
    return render(args.get("--format"), [resource], single=True)


def _project_describe(state: TwinState, args: Parsed) -> str:
    regions = {gce_api.region_of(str(i.get("zone"))) for i in state.kind("instances").values()}
    used = {
        "CPUS_ALL_REGIONS": sum(gce_api.usage(state.resources, r)["CPUS"] for r in regions),
        "NETWORKS": float(len(state.kind("networks"))),
        "FIREWALLS": float(len(state.kind("firewall-rules"))),
    }
    resource = {
        "name": _project(state),
        "quotas": _quotas(gce_api.project_quotas(state.settings), used),
    }
    return render(args.get("--format"), [resource], single=True)


def _image_describe(state: TwinState, args: Parsed) -> str:
    project = args.get("--project") or _project(state)
    image = _first(args)
    if image not in state.settings.get("images", {}).get(project, []):
        raise gce_api.could_not_fetch(
            args.name, f"The resource 'projects/{project}/global/images/{image}' was not found"
        )
    resource = {"name": image, "status": "READY", "selfLink": f"projects/{project}/global/images/"
                f"{image}"}  # fmt: skip
    return render(args.get("--format"), [resource], single=True)


_HANDLERS: dict[tuple[str, str], Handler] = {
    ("instances", "create"): _create("instances", _instance_fields),
    ("instances", "describe"): _describe("instances"),
    ("instances", "delete"): _delete("instances"),
    ("instances", "list"): _list("instances"),
    ("instances", "add-metadata"): _add_metadata,
    ("instances", "attach-disk"): _attach_disk,
    ("instances", "get-serial-port-output"): _serial_output,
    ("disks", "create"): _create("disks", _disk_fields),
    ("disks", "describe"): _describe("disks"),
    ("disks", "delete"): _delete("disks"),
    ("disks", "list"): _list("disks"),
    ("addresses", "create"): _create("addresses", _address_fields),
    ("addresses", "describe"): _describe("addresses"),
    ("addresses", "delete"): _delete("addresses"),
    ("addresses", "list"): _list("addresses"),
    ("firewall-rules", "create"): _create("firewall-rules", _firewall_fields),
    ("firewall-rules", "describe"): _describe("firewall-rules"),
    ("firewall-rules", "delete"): _delete("firewall-rules"),
    ("firewall-rules", "list"): _list("firewall-rules"),
    ("networks", "create"): _create("networks", _network_fields),
    ("networks", "describe"): _describe("networks"),
    ("networks", "delete"): _delete("networks"),
    ("networks", "list"): _list("networks"),
    ("routes", "list"): _list("routes"),
    ("routes", "delete"): _delete("routes"),
    ("instance-templates", "create"): _create("instance-templates", _template_fields),
    ("instance-templates", "describe"): _describe("instance-templates"),
    ("instance-templates", "delete"): _delete("instance-templates"),
    ("instance-templates", "list"): _list("instance-templates"),
    ("instance-groups", "create"): _group_create,
    ("instance-groups", "describe"): _describe("instance-groups"),
    ("instance-groups", "delete"): _delete("instance-groups"),
    ("instance-groups", "list"): _list("instance-groups"),
    ("instance-groups", "list-instances"): _group_instances,
    ("instance-groups", "list-errors"): _group_errors,
    ("regions", "describe"): _region_describe,
    ("project-info", "describe"): _project_describe,
    ("images", "describe"): _image_describe,
}


# -- Artifact Registry, Cloud Storage and org policy: the reads of the preflight -------------


def _repo_key(args: Parsed) -> str:
    return f"{args.get('--location')}/{_first(args)}"


def _repo_describe(state: TwinState, args: Parsed) -> str:
    repo = state.kind("repositories").get(_repo_key(args))
    if repo is None:
        # Artifact Registry's NOT_FOUND as gcloud prints it (wording not checked).
        raise Refused(f"ERROR: ({args.name}) NOT_FOUND: Requested entity was not found.")
    return render(args.get("--format"), [repo], single=True)


def _repo_create(state: TwinState, args: Parsed) -> str:
    key = _repo_key(args)
    if key in state.kind("repositories"):
        raise Refused(f"ERROR: ({args.name}) ALREADY_EXISTS: the repository already exists")
    if args.get("--repository-format") != "docker" or not args.get("--location"):
        raise Unmodelled("artifacts repositories create other than --repository-format=docker "
                         "--location=L")  # fmt: skip
    state.kind("repositories")[key] = {
        "name": f"projects/{_project(state)}/locations/{args.get('--location')}/repositories/"
        f"{_first(args)}",
        "format": "DOCKER",
    }
    return f"Created repository [{_first(args)}].\n"


def _bucket_describe(state: TwinState, args: Parsed) -> str:
    bucket = _first(args).removeprefix("gs://").rstrip("/")
    found = state.kind("buckets").get(bucket)
    if found is None:
        raise Refused(f"ERROR: ({args.name}) gs://{bucket} not found: 404.")
    resource = {"name": bucket, "uniform_bucket_level_access": bool(found.get("ubla")),
                "public_access_prevention": found.get("pap", "inherited")}  # fmt: skip
    return render(args.get("--format"), [resource], single=True)


def _org_policy(state: TwinState, args: Parsed) -> str:
    constraint = _first(args).removeprefix("constraints/")
    enforced = constraint in state.settings.get("org_policies", [])
    resource = {"constraint": f"constraints/{constraint}", "booleanPolicy": {"enforced": enforced}}
    return render(args.get("--format"), [resource], single=True)


_OTHER: dict[tuple[str, ...], Handler] = {
    ("artifacts", "repositories", "describe"): _repo_describe,
    ("artifacts", "repositories", "create"): _repo_create,
    ("storage", "buckets", "describe"): _bucket_describe,
    ("resource-manager", "org-policies", "describe"): _org_policy,
}


# -- ssh / scp -----------------------------------------------------------------------


def _ssh(home: Home, args: Parsed) -> int:
    if len(args.words) != 1:
        raise Unmodelled("gcloud compute ssh without exactly one instance")
    command = args.get("--command")
    if command is None:
        raise Unmodelled("interactive gcloud compute ssh")
    with home.locked() as state:
        _project_check(state, args)
        instance = _instance(state, args, args.words)
        faults.before_ssh(state, instance, "ssh")
        out = master.run_command(state, instance, command)
        if faults.unhealthy(state, instance["name"]) and "apiserver" in instance:
            instance["apiserver"] = "crashlooping"  # started, and never answers
    sys.stdout.write(out)
    return 0


_REMOTE = re.compile(r"^(?:[\w.-]+@)?([a-z][\w-]*):(.+)$")


def _scp(home: Home, args: Parsed, tool: str) -> int:
    if len(args.words) < 2:
        raise Unmodelled("gcloud compute scp with fewer than two paths")
    *sources, dest = args.words
    remote_dest = _REMOTE.match(dest)
    with home.locked() as state:
        _project_check(state, args)
        if remote_dest:  # upload
            instance = _instance(state, args, [remote_dest.group(1)])
            faults.before_ssh(state, instance, "scp")
            for src in sources:
                path = Path(src)
                if not path.exists():
                    raise Refused(f"ERROR: ({args.name}) {src}: No such file or directory")
                master.receive(instance, remote_dest.group(2), path)
            return 0
        for src in sources:  # download
            remote = _REMOTE.match(src)
            if remote is None:
                raise Unmodelled(f"gcloud compute {tool} from local {src} to local {dest}")
            instance = _instance(state, args, [remote.group(1)])
            faults.before_ssh(state, instance, "scp")
            master.send(state, instance, remote.group(2), Path(dest))
    return 0


def _docker_push(home: Home, args: Parsed) -> int:
    if args.passthrough[:1] != ["push"] or len(args.passthrough) != 2:
        raise Unmodelled("gcloud docker -- " + " ".join(args.passthrough))
    image = args.passthrough[1]
    host = image.split("/", 1)[0]
    with home.locked() as state:
        local = state.kind("images").get(f"local/{image}")
        if local is None:
            raise Refused(f"An image does not exist locally with the tag: {image}")
        # Container Registry stopped taking pushes on 2025-03-18; a gcr.io host is an Artifact
        # Registry repository named after it (cloud.google.com/artifact-registry/docs/
        # transition/gcr-repositories: gcr.io and us.gcr.io in `us`, eu.gcr.io in `europe`,
        # asia.gcr.io in `asia`). Without it docker says (issue
        # GoogleCloudPlatform/cloud-builders-community#588):
        location = GCR_LOCATIONS.get(host)
        if location is not None and f"{location}/{host}" not in state.kind("repositories"):
            print("The push refers to repository [" + image + "]", flush=True)
            raise Refused(f'name unknown: Repository "{host}" not found')
        state.kind("images")[f"registry/{image}"] = {**local, "name": f"registry/{image}"}
    print(f"latest: digest: sha256:{'0' * 64} size: 1234")
    return 0


GCR_LOCATIONS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}


def which_real(name: str, skip: Path) -> str | None:
    """The real program `name` on PATH, skipping the twin's own bin directory."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if Path(d).absolute() != skip]
    return shutil.which(name, path=os.pathsep.join(dirs))
