"""The twin's kubectl (the binary its quick-release leaves, found by cluster/kubectl.sh).

Kubeconfigs: `config set-cluster/set-credentials/set-context/use-context`
write JSON (valid YAML) as kube-up.sh's create-kubeconfig asks; `config view -o
jsonpath=...` answers the queries of cluster/common.sh. A cluster is known by
its server address: a base cluster's master (kube-up.sh) or a kubemark master
(start-kubemark.sh writes kubeconfig.kubemark itself).

Base cluster: `create -f` of the kubemark namespace, addons and the hollow-node
ReplicationController, `create configmap/secret`, `delete -f`. Creating the
ReplicationController schedules its pods on the base nodes by their requests
(parsed from the manifest start-kubemark.sh rendered) against each node's
machine type: the pods that fit register as Ready hollow nodes with the
kubemark master the manifest points at; the rest stay Pending.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bisector.backends.gce import capacity as gce_capacity
from bisector.twin.state import Home, Refused, TwinState, Unmodelled

_JSONPATH_CC = "{.current-context}"
_JSONPATH = re.compile(
    r'\{\.(contexts|clusters|users)\[\?\(@\.name == "([^"]*)"\)\]\.(context|cluster|user)\.(\w+)\}'
)


def main(home: Home, argv: list[str]) -> int:
    config_path, args = _kubeconfig_arg(argv)
    if args[:2] == ["version", "--client"]:
        print('Client Version: version.Info{Major:"1", Minor:"7", GitVersion:"v1.7.0-twin"}')
        return 0
    if args[:1] == ["config"]:
        return _config(config_path, args[1:])
    server = _server(config_path)
    with home.locked() as state:
        out = _api(state, server, args)
        for obj in state.kind("clusters").values():
            for item in obj.get("objects", {}).values():
                if "scheduling" in item and not item.get("logged"):
                    item["logged"] = True
                    with home.scheduling_file.open("a", encoding="utf-8") as log:
                        log.write(json.dumps(item["scheduling"]) + "\n")
    print(out, end="")
    return 0


def _kubeconfig_arg(argv: list[str]) -> tuple[Path, list[str]]:
    rest: list[str] = []
    path = os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config"))
    args = iter(argv)
    for arg in args:
        if arg.startswith("--kubeconfig="):
            path = arg.split("=", 1)[1]
        elif arg == "--kubeconfig":  # bisector's cleanup fallback passes it as two words
            path = next(args, "")
        else:
            rest.append(arg)
    if ":" in path:
        raise Unmodelled(f"KUBECONFIG with several files: {path}")
    return Path(path), rest


# -- kubeconfig -------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if not text.strip():
        return {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                "contexts": [], "current-context": ""}  # fmt: skip
    try:
        data = json.loads(text)
    except ValueError:
        raise Unmodelled(f"a YAML kubeconfig the twin did not write: {path}") from None
    assert isinstance(data, dict)
    return data


def _named(items: list[dict[str, Any]], name: str, key: str) -> dict[str, Any]:
    for item in items:
        if item["name"] == name:
            found: dict[str, Any] = item[key]
            return found
    entry: dict[str, Any] = {}
    items.append({"name": name, key: entry})
    return entry


def _flags(args: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in args:
        if arg.startswith("--"):
            key, _, value = arg[2:].partition("=")
            out[key] = value
    return out


def _config(path: Path, args: list[str]) -> int:
    data = _load(path)
    verb = args[0] if args else ""
    flags = _flags(args[1:])
    if verb == "view":
        output = flags.get("o") or (args[args.index("-o") + 1] if "-o" in args else None)
        if output and output.startswith("jsonpath="):
            print(_jsonpath(data, output[len("jsonpath=") :]), end="")
            return 0
        if "minify" in flags and "flatten" in flags:
            print(json.dumps(data, indent=1))
            return 0
        raise Unmodelled(f"kubectl config view {' '.join(args[1:])}")
    name = args[1] if len(args) > 1 else ""
    if verb == "unset":  # cluster/common.sh clear-kubeconfig (kube-down.sh)
        section, _, item = name.partition(".")
        if name == "current-context":
            data["current-context"] = ""
        elif section in ("clusters", "users", "contexts") and item:
            data[section] = [e for e in data[section] if e["name"] != item]
        else:
            raise Unmodelled(f"kubectl config unset {name}")
    if verb == "set-cluster":
        cluster = _named(data["clusters"], name, "cluster")
        cluster["server"] = flags.get("server", cluster.get("server", ""))
        if "certificate-authority" in flags:
            cluster["certificate-authority-data"] = "twin"
    elif verb == "set-credentials":
        user = _named(data["users"], name, "user")
        for key in ("token", "username", "password"):
            if key in flags:
                user[key] = flags[key]
        if "client-certificate" in flags:
            user["client-certificate-data"] = "twin"
            user["client-key-data"] = "twin"
    elif verb == "set-context":
        context = _named(data["contexts"], name, "context")
        context.update({k: flags[k] for k in ("cluster", "user") if k in flags})
    elif verb == "use-context":
        data["current-context"] = name
    elif verb != "unset":
        raise Unmodelled(f"kubectl config {verb}")
    old = os.umask(0o077)  # kubectl writes kubeconfigs 0600
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    finally:
        os.umask(old)
    return 0


def _jsonpath(data: dict[str, Any], expr: str) -> str:
    expr = expr.strip("'\"")
    if expr == _JSONPATH_CC:
        return str(data.get("current-context", ""))
    match = _JSONPATH.fullmatch(expr)
    if match is None:
        raise Unmodelled(f"kubectl config view -o jsonpath={expr}")
    section, name, inner, key = match.groups()
    for item in data.get(section, []):
        if item["name"] == name:
            return str(item.get(inner, {}).get(key, ""))
    return ""


def _server(path: Path) -> str:
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        data = json.loads(text)
        context = next(
            c["context"] for c in data["contexts"] if c["name"] == data["current-context"]
        )
        cluster = next(c["cluster"] for c in data["clusters"] if c["name"] == context["cluster"])
        server = str(cluster["server"])
    except (ValueError, StopIteration, KeyError, TypeError):
        found = re.findall(r"server:\s*(\S+)", text)  # start-kubemark.sh's own YAML
        if len(found) != 1:
            raise Refused(f"error: no server in kubeconfig {path}") from None
        server = found[0]
    return server.removeprefix("https://").split(":")[0]


# -- the API of a cluster -----------------------------------------------------------------


def _master(state: TwinState, ip: str) -> dict[str, Any]:
    for instance in state.kind("instances").values():
        if instance["networkInterfaces"][0]["accessConfigs"][0]["natIP"] == ip:
            return instance
    raise Refused(f"Unable to connect to the server: dial tcp {ip}:443: i/o timeout")


def _api(state: TwinState, ip: str, args: list[str]) -> str:
    instance = _master(state, ip)
    if instance["name"].endswith("-kubemark-master"):
        return _kubemark_api(state, instance, ip, args)
    if not instance["name"].endswith("-master"):
        raise Refused(f"{instance['name']} serves no apiserver")
    return _base_api(state, instance, ip, args)


def _kubemark_api(state: TwinState, instance: dict[str, Any], ip: str, args: list[str]) -> str:
    if instance.get("apiserver") != "running":
        raise Refused(f"The connection to the server {ip} was refused")
    if args in (["get", "node"], ["get", "nodes"]):
        ready = state.kind("clusters").get(f"kubemark/{ip}", {}).get("ready", 0)
        rows = "".join(f"hollow-node-{i}   Ready     1m        v1.7.0\n" for i in range(ready))
        return "NAME   STATUS    AGE       VERSION\n" + rows
    raise Unmodelled(f"kubectl {' '.join(args)} against the kubemark master")


def _base_nodes(state: TwinState, master_name: str) -> list[dict[str, Any]]:
    prefix = master_name.removesuffix("-master")
    return [
        i for i in state.kind("instances").values()
        if f"{prefix}-minion" in i.get("tags", {}).get("items", [])
    ]  # fmt: skip


def _base_api(state: TwinState, instance: dict[str, Any], ip: str, args: list[str]) -> str:
    cluster = state.kind("clusters").setdefault(
        f"base/{instance['name']}", {"name": f"base/{instance['name']}", "objects": {}}
    )
    objects: dict[str, Any] = cluster["objects"]
    nodes = _base_nodes(state, instance["name"])
    namespace = next((a.split("=", 1)[1] for a in args if a.startswith("--namespace=")), None)
    words = [a for a in args if not a.startswith("--namespace=")]
    if words in (["get", "nodes"], ["get", "node"]):
        # The 2017 GCE master registers its kubelet (REGISTER_MASTER_KUBELET), unschedulable;
        # validate-cluster.sh expects NUM_NODES + the masters.
        rows = f"{instance['name']}   Ready,SchedulingDisabled   5m   v1.7.0\n"
        rows += "".join(f"{n['name']}   Ready     5m        v1.7.0\n" for n in nodes)
        return "NAME   STATUS    AGE       VERSION\n" + rows
    if words[:2] in (["get", "componentstatuses"], ["get", "cs"]):
        if "-o" in words:
            return "Healthy:True\nHealthy:True\nHealthy:True\n"
        return "NAME                 STATUS    MESSAGE\nscheduler   Healthy   ok\n"
    if words == ["cluster-info"]:
        return f"Kubernetes master is running at https://{ip}\n"
    if words[:2] == ["create", "-f"] and len(words) == 3:
        return _create_files(state, objects, nodes, Path(words[2]), namespace)
    if words[:2] == ["delete", "-f"] and len(words) == 3:
        return _delete_files(state, objects, Path(words[2]))
    if words[:2] in (["create", "configmap"], ["create", "secret"]):
        name = words[3] if words[1] == "secret" else words[2]
        _need_namespace(objects, namespace)
        objects[f"{words[1]}/{namespace}/{name}"] = {"kind": words[1]}
        return f'{words[1]} "{name}" created\n'
    if words[:3] == ["delete", "namespace", "kubemark"]:
        _delete_namespace(state, objects, "kubemark", missing_ok="--ignore-not-found" in words)
        return 'namespace "kubemark" deleted\n'
    raise Unmodelled(f"kubectl {' '.join(args)} against a base cluster")


def _need_namespace(objects: dict[str, Any], namespace: str | None) -> None:
    if namespace is None or f"namespace/{namespace}" not in objects:
        raise Refused(f'Error from server (NotFound): namespaces "{namespace}" not found')


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    if not path.is_file():
        raise Refused(f'error: the path "{path}" does not exist')
    return [path]


def _kind_and_name(text: str) -> tuple[str, str]:
    kind = re.search(r'"?kind"?\s*:\s*"?(\w+)', text)
    name = re.search(r'"?name"?\s*:\s*"?([\w.-]+)', text)
    if kind is None or name is None:
        raise Unmodelled("a manifest without kind or name")
    return kind.group(1), name.group(1)


def _create_files(
    state: TwinState, objects: dict[str, Any], nodes: list[dict[str, Any]], path: Path,
    namespace: str | None,
) -> str:  # fmt: skip
    out = ""
    for file in _files(path):
        text = file.read_text(encoding="utf-8")
        kind, name = _kind_and_name(text)
        if kind == "Namespace":
            key = f"namespace/{name}"
        else:
            _need_namespace(objects, namespace)
            key = f"{kind.lower()}/{namespace}/{name}"
        if key in objects:
            raise Refused(f'Error from server (AlreadyExists): {kind} "{name}" already exists')
        objects[key] = {"kind": kind, "file": str(file)}
        if kind == "ReplicationController" and name == "hollow-node":
            objects[key]["scheduling"] = _schedule(state, objects, nodes, text)
        elif kind == "ReplicationController":
            objects[key]["requests"] = _pod_requests(text)
        out += f'{kind.lower()} "{name}" created\n'
    return out


def _delete_files(state: TwinState, objects: dict[str, Any], path: Path) -> str:
    out = ""
    for file in _files(path):
        kind, name = _kind_and_name(file.read_text(encoding="utf-8"))
        if kind == "Namespace":
            _delete_namespace(state, objects, name, missing_ok=False)
        else:
            keys = [
                k for k in objects if k.startswith(f"{kind.lower()}/") and k.endswith(f"/{name}")
            ]
            if not keys:
                raise Refused(f'Error from server (NotFound): {kind.lower()} "{name}" not found')
            for key in keys:
                _forget(state, objects.pop(key))
        out += f'{kind.lower()} "{name}" deleted\n'
    return out


def _delete_namespace(state: TwinState, objects: dict[str, Any], name: str, *,
                      missing_ok: bool) -> None:  # fmt: skip
    if f"namespace/{name}" not in objects:
        if missing_ok:
            return
        raise Refused(f'Error from server (NotFound): namespaces "{name}" not found')
    for key in [k for k in objects if k == f"namespace/{name}" or f"/{name}/" in k]:
        _forget(state, objects.pop(key))


def _forget(state: TwinState, obj: dict[str, Any]) -> None:
    scheduling = obj.get("scheduling")
    if scheduling:
        state.kind("clusters").pop(f"kubemark/{scheduling['master_ip']}", None)


_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|K|M|G)?$")
_FACTORS = {
    None: 1,
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "K": 1000,
    "M": 1000**2,
    "G": 1000**3,
}


def _quantity(text: str, *, cpu: bool) -> int:
    match = _QUANTITY.match(text.strip().strip('"'))
    if match is None:
        raise Unmodelled(f"resource quantity {text!r}")
    number, unit = float(match.group(1)), match.group(2)
    if cpu:
        return int(number if unit == "m" else number * 1000)
    return int(number * _FACTORS[unit])


def _pod_requests(text: str) -> tuple[int, int]:
    """Summed container requests (millicpu, bytes) of a manifest, YAML or JSON."""
    cpu = sum(_quantity(v, cpu=True) for v in re.findall(r'"?cpu"?\s*:\s*"?([\w.]+)"?', text))
    mem = sum(_quantity(v, cpu=False) for v in re.findall(r'"?memory"?\s*:\s*"?([\w.]+)"?', text))
    return cpu, mem


def _schedule(state: TwinState, objects: dict[str, Any], nodes: list[dict[str, Any]],
              text: str) -> dict[str, Any]:  # fmt: skip
    replicas = re.search(r"replicas:\s*(\d+)", text)
    master_ip = re.search(r"https://([\d.]+):443", text)
    if replicas is None or master_ip is None:
        raise Unmodelled("a hollow-node manifest without replicas or master address")
    cpu, mem = _pod_requests(text)
    # Other pods already placed (heapster) take room first, on the first node.
    used_cpu = sum(o.get("requests", (0, 0))[0] for o in objects.values())
    used_mem = sum(o.get("requests", (0, 0))[1] for o in objects.values())
    fit = 0
    capacity = {"millicpu": 0, "bytes": 0, "nodes": len(nodes)}
    for node in nodes:
        machine = gce_capacity.machine(node["machineType"], "twin")
        free_cpu = machine.millicpu - gce_capacity.SYSTEM_MILLICPU_PER_NODE - used_cpu
        free_mem = machine.bytes - gce_capacity.SYSTEM_BYTES_PER_NODE - used_mem
        used_cpu = used_mem = 0
        pods = gce_capacity.MAX_PODS_PER_NODE - gce_capacity.SYSTEM_PODS_PER_NODE
        fit += max(0, min(free_cpu // cpu, free_mem // mem, pods))
        capacity["millicpu"] += machine.millicpu
        capacity["bytes"] += machine.bytes
    want = int(replicas.group(1))
    ready = min(want, fit)
    ip = master_ip.group(1)
    state.kind("clusters")[f"kubemark/{ip}"] = {"name": f"kubemark/{ip}", "ready": ready}
    return {"master_ip": ip, "replicas": want, "scheduled": ready, "pending": want - ready,
            "pod_millicpu": cpu, "pod_bytes": mem, "capacity": capacity}  # fmt: skip
