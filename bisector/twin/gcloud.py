"""The twin's `gcloud`: the compute calls of the 2017 kube-up/kubemark scripts, on state.

Each resource kind keeps what the scripts later ask back (an address's IP, an
instance's NAT IP and machine type, a group's instances). Creating what exists
fails as GCE does ("already exists"), describing or deleting what does not
fails with "was not found", so the scripts' own existence checks and retries
run their real paths. `ssh`/`scp` to an instance reach the twin's model of that
VM (a kubemark master receives the server tar, starts its apiserver, and serves
`/var/log/kube-apiserver.log*` from the sim model).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.twin import master
from bisector.twin.query import matches, render
from bisector.twin.state import Home, Refused, TwinState, Unmodelled

_BOOL_FLAGS = {
    "--quiet", "-q", "--recurse", "--no-scopes", "--can-ip-forward", "--preemptible",
    "--restart-on-failure", "--authorize-only", "-a", "--no-boot-disk-auto-delete",
    "--async", "--no-address", "--enable-ip-alias",
}  # fmt: skip
_SHORT_VALUE = {"-r": "--regexp"}


@dataclass
class Args:
    words: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)
    passthrough: list[str] = field(default_factory=list)  # after `--`

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.flags.get(name)
        return values[-1] if values else default

    def need(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise Refused(f"ERROR: (gcloud) argument {name}: expected one argument")
        return value


def parse(argv: list[str]) -> Args:
    args = Args()
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            args.passthrough = argv[i + 1 :]
            break
        if token.startswith("-") and token != "-":
            name, eq, value = token.partition("=")
            name = _SHORT_VALUE.get(name, name)
            if eq:
                args.flags.setdefault(name, []).append(value)
            elif name in _BOOL_FLAGS:
                args.flags.setdefault(name, []).append("true")
            else:
                if i + 1 >= len(argv):
                    raise Unmodelled(f"flag {name} without a value")
                args.flags.setdefault(name, []).append(argv[i + 1])
                i += 1
        else:
            args.words.append(token)
        i += 1
    return args


def main(home: Home, argv: list[str]) -> int:
    args = parse(argv)
    words = [w for w in args.words if w not in ("beta", "alpha")]
    if words[:1] == ["compute"]:
        return _compute(home, words[1:], args)
    if words[:3] == ["config", "list", "project"] or words[:3] == [
        "config",
        "get-value",
        "project",
    ]:
        project = home.settings().get("project", "")
        if args.get("--format") not in (None, "value(core.project)"):
            raise Unmodelled(f"--format={args.get('--format')}")
        print(project)
        return 0
    if words[:2] == ["auth", "list"]:
        print(home.settings().get("account", "twin@example.com"))
        return 0
    if words[:1] == ["version"] and args.get("--format") == "json":
        print('{"Google Cloud SDK": "528.0.0", "alpha": "2025.06.20", '
              '"beta": "2025.06.20", "core": "2025.06.20"}')  # fmt: skip
        return 0
    if words[:1] == ["docker"]:
        return _docker_push(home, args)
    raise Unmodelled("gcloud " + " ".join(words[:3]))


# -- compute --------------------------------------------------------------------------


def _compute(home: Home, words: list[str], args: Args) -> int:
    if not words:
        raise Unmodelled("gcloud compute")
    group = words[0]
    if group == "ssh":
        return _ssh(home, words[1:], args)
    if group in ("scp", "copy-files"):
        # copy-files: start-kubemark.sh before kubernetes 32bce030d8 (still in SDK 528,
        # deprecated: the same scp, recursive).
        return _scp(home, words[1:], args)
    if group == "instance-groups" and words[1:2] == ["managed"]:
        kind, verb, names = "instance-groups", words[2] if len(words) > 2 else "", words[3:]
    elif group == "networks" and words[1:2] == ["subnets"]:
        raise Unmodelled("gcloud compute networks subnets (ENABLE_IP_ALIASES)")
    else:
        kind, verb, names = group, words[1] if len(words) > 1 else "", words[2:]
    if (kind, verb) == ("target-pools", "describe") or (kind, verb) == (
        "forwarding-rules",
        "describe",
    ):
        # The twin never creates these (master replication only): kube-down.sh asks.
        raise _missing(kind, names[0] if names else "?")
    handler = _HANDLERS.get((kind, verb))
    if handler is None:
        raise Unmodelled(f"gcloud compute {kind} {verb}")
    with home.locked() as state:
        out = handler(state, names, args)
    sys.stdout.write(out)
    return 0


def _project_check(state: TwinState, args: Args) -> None:
    want = state.settings.get("project")
    got = args.get("--project")
    if want and got and got != want:
        raise Refused(f"ERROR: (gcloud) project {got} is not the twin's project {want}")


def _create(kind: str, fields: Any) -> Any:
    def handler(state: TwinState, names: list[str], args: Args) -> str:
        _project_check(state, args)
        if not names:
            raise Refused(f"ERROR: (gcloud.compute.{kind}.create) NAME required")
        table = state.kind(kind)
        for name in names:
            if name in table:
                raise Refused(
                    f"ERROR: (gcloud.compute.{kind}.create) Could not fetch resource:\n"
                    f" - The resource '{name}' already exists"
                )
            table[name] = {"name": name, **fields(state, name, args)}
        return f"Created [{kind}/{', '.join(names)}].\n"

    return handler


def _missing(kind: str, name: str) -> Refused:
    return Refused(
        f"ERROR: (gcloud.compute.{kind}) Could not fetch resource:\n"
        f" - The resource 'projects/twin/{kind}/{name}' was not found"
    )


def _describe(kind: str) -> Any:
    def handler(state: TwinState, names: list[str], args: Args) -> str:
        _project_check(state, args)
        if len(names) != 1:
            raise Unmodelled(f"gcloud compute {kind} describe with {len(names)} names")
        resource = state.kind(kind).get(names[0])
        if resource is None:
            raise _missing(kind, names[0])
        return render(args.get("--format"), [resource], single=True)

    return handler


def _delete(kind: str) -> Any:
    def handler(state: TwinState, names: list[str], args: Args) -> str:
        _project_check(state, args)
        table = state.kind(kind)
        for name in names:
            if name not in table:
                raise _missing(kind, name)
        for name in names:
            removed = table.pop(name)
            if kind == "instance-groups":
                for instance in removed.get("instances", []):
                    gone = state.kind("instances").pop(instance, None)
                    if gone is not None:
                        _delete_instance_disks(state, gone)
            if kind == "instances":
                _delete_instance_disks(state, removed, every=args.get("--delete-disks") == "all")
        return f"Deleted [{kind}/{', '.join(names)}].\n"

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


def _list(kind: str) -> Any:
    def handler(state: TwinState, names: list[str], args: Args) -> str:
        _project_check(state, args)
        regexp = args.get("--regexp")
        zones = args.get("--zones")
        found = [
            r
            for r in state.kind(kind).values()
            if (not names or r["name"] in names)
            and matches(r, args.get("--filter"), regexp)
            and (zones is None or "zone" not in r or r["zone"] in zones.split(","))
        ]
        return render(args.get("--format"), sorted(found, key=lambda r: r["name"]), single=False)

    return handler


def _instance_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    zone = args.need("--zone")
    disks = []
    for spec in args.flags.get("--disk", []):
        parts = dict(p.split("=", 1) for p in spec.split(","))
        disk = parts.get("name", "")
        if disk not in state.kind("disks"):
            raise _missing("disks", disk)
        disks.append({"deviceName": disk, "autoDelete": parts.get("auto-delete") == "yes"})
    state.kind("disks")[name] = {"name": name, "zone": zone, "sizeGb": "boot"}
    return {
        "zone": zone,
        "machineType": args.get("--machine-type", "n1-standard-1"),
        "status": "RUNNING",
        "tags": {"items": (args.get("--tags") or "").split(",")},
        "networkInterfaces": [
            {
                "network": args.get("--network", "default"),
                "accessConfigs": [
                    {"name": "external-nat", "natIP": args.get("--address") or state.next_ip()}
                ],
            }
        ],
        "disks": disks,
        "metadata": {},
        "files": {},
    }  # fmt: skip


def _add_metadata(state: TwinState, names: list[str], args: Args) -> str:
    instance = _instance(state, names)
    for spec in args.flags.get("--metadata-from-file", []):
        for pair in spec.split(","):
            key, _, path = pair.partition("=")
            if not Path(path).is_file():
                raise Refused(f"ERROR: (gcloud) Unable to read file [{path}]")
            instance["metadata"][key] = f"<file {Path(path).name}>"
    for spec in args.flags.get("--metadata", []):
        for pair in spec.split(","):
            key, _, value = pair.partition("=")
            instance["metadata"][key] = value
    return f"Updated [instances/{instance['name']}].\n"


def _attach_disk(state: TwinState, names: list[str], args: Args) -> str:
    instance = _instance(state, names)
    disk = args.need("--disk")
    if disk not in state.kind("disks"):
        raise _missing("disks", disk)
    instance["disks"].append({"deviceName": disk, "autoDelete": False})
    return f"Updated [instances/{instance['name']}].\n"


def _instance(state: TwinState, names: list[str]) -> dict[str, Any]:
    if len(names) != 1:
        raise Unmodelled("an instance call without exactly one instance name")
    instance = state.kind("instances").get(names[0])
    if instance is None:
        raise _missing("instances", names[0])
    assert isinstance(instance, dict)
    return instance


def _group_create(state: TwinState, names: list[str], args: Args) -> str:
    out: str = _create("instance-groups", lambda s, n, a: {"zone": a.need("--zone")})(
        state, names, args
    )
    (name,) = names
    template = state.kind("instance-templates").get(args.need("--template"))
    if template is None:
        raise _missing("instance-templates", args.need("--template"))
    base = args.need("--base-instance-name")
    group = state.kind("instance-groups")[name]
    group["instanceGroup"] = name
    group["template"] = template["name"]
    group["instances"] = []
    for i in range(int(args.need("--size"))):
        instance = f"{base}-{i:04x}"
        state.kind("instances")[instance] = {
            "name": instance,
            "zone": group["zone"],
            "machineType": template["machineType"],
            "status": "RUNNING",
            "tags": template["tags"],
            "networkInterfaces": [
                {"network": template["network"],
                 "accessConfigs": [{"name": "external-nat", "natIP": state.next_ip()}]}
            ],
            "disks": [], "metadata": {}, "files": {}, "group": name,
        }  # fmt: skip
        state.kind("disks")[instance] = {"name": instance, "zone": group["zone"], "sizeGb": "boot"}
        group["instances"].append(instance)
    return out


def _group_stable(state: TwinState, names: list[str], args: Args) -> str:
    if names[0] not in state.kind("instance-groups"):
        raise _missing("instance-groups", names[0])
    return "Group is stable\n"


def _group_instances(state: TwinState, names: list[str], args: Args) -> str:
    group = state.kind("instance-groups").get(names[0])
    if group is None:
        raise _missing("instance-groups", names[0])
    rows = [{"name": i, "instance": i, "status": "RUNNING"} for i in group["instances"]]
    return render(args.get("--format"), rows, single=False)


def _template_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    return {
        "machineType": args.need("--machine-type"),
        "tags": {"items": (args.get("--tags") or "").split(",")},
        "network": args.get("--network", "default"),
    }


def _address_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    return {"region": args.need("--region"), "address": state.next_ip(), "status": "RESERVED"}


def _firewall_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    network = args.get("--network") or "default"
    if network not in state.kind("networks") and network != "default":
        raise _missing("networks", network)
    return {"network": network, "allowed": args.get("--allow", ""),
            "targetTags": args.get("--target-tags", "")}  # fmt: skip


def _network_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    return {"mode": args.get("--mode", "auto")}


def _disk_fields(state: TwinState, name: str, args: Args) -> dict[str, Any]:
    return {"zone": args.need("--zone"), "sizeGb": args.get("--size", "10GB"),
            "type": args.get("--type", "pd-standard")}  # fmt: skip


_HANDLERS: dict[tuple[str, str], Any] = {
    ("instances", "create"): _create("instances", _instance_fields),
    ("instances", "describe"): _describe("instances"),
    ("instances", "delete"): _delete("instances"),
    ("instances", "list"): _list("instances"),
    ("instances", "add-metadata"): _add_metadata,
    ("instances", "attach-disk"): _attach_disk,
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
    ("instance-groups", "wait-until-stable"): _group_stable,
    ("instance-groups", "list-instances"): _group_instances,
}


# -- ssh / scp -----------------------------------------------------------------------


def _ssh(home: Home, words: list[str], args: Args) -> int:
    if len(words) != 1:
        raise Unmodelled("gcloud compute ssh without exactly one instance")
    command = args.get("--command")
    if command is None:
        raise Unmodelled("interactive gcloud compute ssh")
    with home.locked() as state:
        instance = _instance(state, [words[0].split("@")[-1]])
        out = master.run_command(state, instance, command)
    sys.stdout.write(out)
    return 0


_REMOTE = re.compile(r"^(?:[\w.-]+@)?([a-z][\w-]*):(.+)$")


def _scp(home: Home, words: list[str], args: Args) -> int:
    if len(words) < 2:
        raise Unmodelled("gcloud compute scp with fewer than two paths")
    *sources, dest = words
    remote_dest = _REMOTE.match(dest)
    with home.locked() as state:
        if remote_dest:  # upload
            instance = _instance(state, [remote_dest.group(1)])
            for src in sources:
                path = Path(src)
                if not path.exists():
                    raise Refused(f"ERROR: (gcloud.compute.scp) {src}: No such file or directory")
                master.receive(instance, remote_dest.group(2), path)
            return 0
        for src in sources:  # download
            remote = _REMOTE.match(src)
            if remote is None:
                raise Unmodelled(f"gcloud compute scp from local {src} to local {dest}")
            instance = _instance(state, [remote.group(1)])
            master.send(state, instance, remote.group(2), Path(dest))
    return 0


def _docker_push(home: Home, args: Args) -> int:
    if args.passthrough[:1] != ["push"] or len(args.passthrough) != 2:
        raise Unmodelled("gcloud docker -- " + " ".join(args.passthrough))
    image = args.passthrough[1]
    with home.locked() as state:
        local = state.kind("images").get(f"local/{image}")
        if local is None:
            raise Refused(f"An image does not exist locally with the tag: {image}")
        state.kind("images")[f"registry/{image}"] = {**local, "name": f"registry/{image}"}
    print(f"latest: digest: sha256:{'0' * 64} size: 1234")
    return 0


def which_real(name: str, skip: Path) -> str | None:
    """The real program `name` on PATH, skipping the twin's own bin directory."""
    import os

    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if Path(d).absolute() != skip]
    return shutil.which(name, path=os.pathsep.join(dirs))
