"""The VMs the twin's ssh/scp reach: a kubemark master, whose apiserver log is the sim's.

A kubemark master (created by start-kubemark.sh) receives the server tar and
the start-up files over `gcloud compute scp`; `sudo bash
/home/kubernetes/start-kubemark-master.sh` over ssh starts its apiserver, with
the simulator profile the fake `make quick-release` wrote into that server tar
(the candidate's "code"). Copying `/var/log/kube-apiserver.log*` from it runs
the sim model for the hollow nodes the base cluster scheduled for this master
and writes the log there.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import time
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bisector.durations import parse_duration
from bisector.twin.state import Refused, TwinState, Unmodelled

if TYPE_CHECKING:
    from bisector.sim import SimProfile

APISERVER_MARKER = "kubernetes/server/bin/kube-apiserver"
SERVER_TAR = "kubernetes-server-linux-amd64.tar.gz"
START_MASTER = "sudo bash /home/kubernetes/start-kubemark-master.sh"
LOG_GLOB = "/var/log/kube-apiserver.log*"
# The backend's read of the apiserver's /metrics on the master (gce_steps.apiserver_metrics:
# the 2017 kubemark master's insecure port, 8080).
METRICS = "curl -sSf http://127.0.0.1:8080/metrics"
_ETCD_MEMBER_DELETE = re.compile(
    r"curl -s localhost:(2379|4002)/v2/members/\$\(curl -s localhost:\1/v2/members -XGET .*"
    r"-XDELETE -L 2>/dev/null"
)


def read_build(tar_path: Path) -> dict[str, Any]:
    """The build record the fake quick-release put into a server tar."""
    try:
        with tarfile.open(tar_path) as tar:
            member = tar.extractfile(APISERVER_MARKER)
            if member is None:
                raise KeyError(APISERVER_MARKER)
            data = json.loads(member.read().decode("utf-8"))
    except (OSError, KeyError, ValueError, tarfile.TarError) as exc:
        raise Refused(f"twin: {tar_path} is not a server tar of the twin's build ({exc})") from None
    assert isinstance(data, dict)
    return data


def write_server_tar(path: Path, build: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(build, indent=1).encode("utf-8")
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(APISERVER_MARKER)
        info.size = len(blob)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(blob))


def receive(instance: dict[str, Any], remote_dir: str, path: Path) -> None:
    target = remote_dir.rstrip("/") + "/" + path.name
    if path.name == SERVER_TAR:
        instance["build"] = read_build(path)
    instance["files"][target] = "dir" if path.is_dir() else path.stat().st_size


def run_command(state: TwinState, instance: dict[str, Any], command: str) -> str:
    if command.strip() in (":", "echo test > /dev/null"):
        return ""
    if _ETCD_MEMBER_DELETE.fullmatch(command) and not instance["name"].endswith("-kubemark-master"):
        # kube-down.sh's remove-replica-from-etcd on the (only) master: output discarded.
        return ""
    if command == METRICS:
        return _metrics(instance)
    if command.startswith("sudo mkdir /home/kubernetes/k8s_auth_data -p"):
        instance["pki"] = True
        return ""
    if command == START_MASTER:
        needed = (f"/home/kubernetes/{SERVER_TAR}", "/home/kubernetes/start-kubemark-master.sh",
                  "/home/kubernetes/kubemark-master-env.sh")  # fmt: skip
        missing = [f for f in needed if f not in instance["files"]]
        if missing or "build" not in instance:
            raise Refused(f"bash: {missing[0] if missing else needed[0]}: No such file")
        if not instance.get("pki"):
            raise Refused("start-kubemark-master.sh: /home/kubernetes/k8s_auth_data missing")
        instance["apiserver"] = "running"
        instance["apiserver_started"] = time.time()  # its log is stamped from then on
        return "The master has started.\n"
    raise Unmodelled(f"ssh command on {instance['name']}: {command[:80]}")


def send(state: TwinState, instance: dict[str, Any], remote: str, dest: Path) -> None:
    from bisector.sim import RunParams, simulate  # only when a log is served: shims start fast

    if remote != LOG_GLOB:
        raise Unmodelled(f"scp of {remote} from {instance['name']}")
    if instance.get("apiserver") != "running":
        raise Refused(f"scp: {remote}: No such file or directory")
    if not dest.is_dir():
        raise Refused(f"scp: {dest}: Not a directory")
    ip = instance["networkInterfaces"][0]["accessConfigs"][0]["natIP"]
    hollow = state.kind("clusters").get(f"kubemark/{ip}", {}).get("ready", 0)
    if hollow < 1:
        raise Refused(f"twin: no hollow node ever registered with {instance['name']}")
    build = instance["build"]
    settings = state.settings
    profile = _profile(build["profile"])
    seed_text = f"{settings.get('seed', 0)}:{build['commit']}:{instance['name']}:{state.counter}"
    params = RunParams(
        nodes=hollow,
        duration_s=parse_duration(str(settings.get("log_duration", "20m"))),
        seed=int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "big"),
        noise=float(settings.get("noise", 0.0)),
        git_version=f"v1.7.0-beta.0+{build['commit'][:14]}",
        commit=build["commit"],
        # A real master's log is on the wall clock from its apiserver's start: bisector
        # tells a log of this launch from one left by an earlier cluster by that.
        start=datetime.fromtimestamp(instance.get("apiserver_started", time.time()), UTC).replace(
            tzinfo=None
        ),
    )
    summary = simulate(profile, params, dest / "kube-apiserver.log")
    instance.setdefault("served", []).append(
        {"commit": build["commit"], "nodes": hollow, "conflicts": summary.conflicts}
    )


def _profile(values: dict[str, Any]) -> SimProfile:
    from bisector.sim import SimProfile

    known = {f.name for f in fields(SimProfile)}
    unknown = set(values) - known
    if unknown:
        raise Unmodelled(f"sim profile keys {sorted(unknown)}")
    return SimProfile(**values)


def _metrics(instance: dict[str, Any]) -> str:
    """A kube-apiserver's /metrics of 2017 (v1.7 names: apiserver_request_count by verb,
    resource, code): a started apiserver answers, with counts growing at each read; one that
    is not running refuses the connection, as curl -sSf says it (exit 7, passed on by ssh)."""
    if instance.get("apiserver") != "running":
        raise Refused(
            "curl: (7) Failed to connect to 127.0.0.1 port 8080: Connection refused", code=7
        )
    reads = int(instance.get("metrics_reads", 0)) + 1
    instance["metrics_reads"] = reads
    lines = [
        "# HELP apiserver_request_count Counter of apiserver requests broken out for each verb,"
        " API resource, client, and HTTP response contentType and code.",
        "# TYPE apiserver_request_count counter",
    ]
    for verb, code, per_read in (("PATCH", "200", 5000), ("PATCH", "409", 50), ("GET", "200", 900)):
        lines.append(
            f'apiserver_request_count{{client="kubemark",code="{code}",contentType='
            f'"application/vnd.kubernetes.protobuf",resource="nodes",verb="{verb}"}} '
            f"{per_read * reads}"
        )
    lines += [
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge",
        "process_start_time_seconds 1.4964e+09",
    ]
    return "\n".join(lines) + "\n"
