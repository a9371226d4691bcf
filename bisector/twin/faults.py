"""Failures a real run meets, injected into the twin (its settings' `faults` list).

Each fault is a table with a `kind` and where it strikes:

* `stockout`: `command` (e.g. "compute instances create", on resources whose
  name matches `name`) fails with the zone's ZONE_RESOURCE_POOL_EXHAUSTED answer,
  `times` times (absent: every time);
* `rate-limit`: `command` (on resources whose name matches `name`) fails with
  the API's 429 or 403 rateLimitExceeded answer (`status`), `times` times;
* `ssh-refused`: `gcloud compute ssh`/`scp` to instances whose name matches
  `instance` (a regex) fail as ssh does when sshd does not answer yet, `times`
  times in all;
* `slow-boot`: the first `attempts` ssh/scp calls to each matching instance
  after it was created are refused (a VM that takes long to boot);
* `master-unhealthy`: a master whose name matches `instance` never answers on
  https (kube-up.sh's wait for its apiserver), and a kubemark master's apiserver
  never starts;
* `mig-partial`: managed instance groups matching `group` create only `created`
  instances, the rest stay in `creating` with the zone's stockout error (a
  partly created group; one short of quota does the same by itself);
* `quota`: nothing to inject: the twin enforces its project's quotas
  (settings `quotas`), so a project with low quotas is a fault by itself.

Quota, stockout and rate limits are quota/API errors as the backend sees them in
a script's output; each kind has its test of what the backend does with it
(tests/backends/gce/test_backend_faults.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bisector.twin import gce_api
from bisector.twin.state import Refused, TwinState

KINDS = ("stockout", "rate-limit", "ssh-refused", "slow-boot", "master-unhealthy", "mig-partial")
SSH_REFUSED_EXIT = 255  # gcloud compute ssh passes on ssh's exit code


@dataclass(frozen=True)
class Fault:
    index: int
    spec: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.spec["kind"])

    def matches(self, field: str, value: str) -> bool:
        pattern = self.spec.get(field)
        return pattern is None or re.fullmatch(str(pattern), value) is not None


def faults(state: TwinState, kind: str) -> list[Fault]:
    found = []
    for i, spec in enumerate(state.settings.get("faults", [])):
        if spec.get("kind") not in KINDS:
            raise ValueError(f"twin settings: unknown fault kind {spec.get('kind')!r}")
        if spec["kind"] == kind:
            found.append(Fault(i, spec))
    return found


def _take(state: TwinState, fault: Fault, key: str = "") -> bool:
    """Whether `fault` fires now (and count it): `times` bounds how often."""
    counter = f"{fault.index}{key}"
    fired = state.fired.get(counter, 0)
    limit = fault.spec.get("times")
    if limit is not None and fired >= int(limit):
        return False
    state.fired[counter] = fired + 1
    return True


def before_api_call(state: TwinState, command: tuple[str, ...], name: str, zone: str) -> None:
    """Stockouts and rate limits for `command` (its words after `gcloud`, without a track)."""
    words = " ".join(command)
    project = str(state.settings.get("project", "twin-project"))
    where = ".".join(("gcloud", *command))
    for fault in faults(state, "rate-limit"):
        if fault.matches("command", words) and fault.matches("name", name) and _take(state, fault):
            raise gce_api.could_not_fetch(
                where, gce_api.rate_limit_message(int(fault.spec.get("status", 429)))
            )
    for fault in faults(state, "stockout"):
        if fault.matches("command", words) and fault.matches("name", name) and _take(state, fault):
            raise gce_api.could_not_fetch(where, gce_api.stockout_message(project, zone or "?"))


def before_ssh(state: TwinState, instance: dict[str, Any], tool: str) -> None:
    """ssh/scp to an instance whose sshd does not answer (yet)."""
    name = instance["name"]
    refused = any(
        f.matches("instance", name) and _take(state, f) for f in faults(state, "ssh-refused")
    )
    for fault in faults(state, "slow-boot"):
        if fault.matches("instance", name):
            seen = state.fired.get(f"{fault.index}:{name}", 0)
            if seen < int(fault.spec.get("attempts", 1)):
                state.fired[f"{fault.index}:{name}"] = seen + 1
                refused = True
    if refused:
        ip = instance["networkInterfaces"][0]["accessConfigs"][0]["natIP"]
        lost = "lost connection\n" if tool == "scp" else ""
        raise Refused(
            f"ssh: connect to host {ip} port 22: Connection refused\n{lost}"
            f"ERROR: (gcloud.compute.{tool}) [/usr/bin/{tool}] exited with return code "
            f"[{SSH_REFUSED_EXIT if tool == 'ssh' else 1}].",
            code=SSH_REFUSED_EXIT if tool == "ssh" else 1,
        )


def unhealthy(state: TwinState, instance_name: str) -> bool:
    return any(f.matches("instance", instance_name) for f in faults(state, "master-unhealthy"))


def group_creates(state: TwinState, group: str, size: int) -> int:
    """How many of a new group's `size` instances the zone creates."""
    for fault in faults(state, "mig-partial"):
        if fault.matches("group", group):
            return min(size, int(fault.spec.get("created", 0)))
    return size
