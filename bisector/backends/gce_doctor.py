"""What `bisector doctor` checks for the gce backend beyond its tools: gcloud login, project."""

from __future__ import annotations

from pathlib import Path

from bisector import proc
from bisector.backends.registry import Finding
from bisector.config import Section

_TIMEOUT_S = 30.0


def _gcloud(*args: str) -> str | None:
    try:
        return proc.run(["gcloud", *args], timeout=_TIMEOUT_S).stdout.strip()
    except proc.CommandError:
        return None


def check(section: Section) -> list[Finding]:
    found: list[Finding] = []
    account = _gcloud("auth", "list", "--filter=status:ACTIVE", "--format=value(account)")
    if account:
        found.append(Finding(True, "gcloud credentials", account.splitlines()[0]))
    else:
        found.append(
            Finding(False, "gcloud credentials", "no active account; run `gcloud auth login`")
        )
    configured = section.opt_str("project")
    project = _gcloud("config", "get-value", "project")
    if configured:
        found.append(Finding(True, "gcp project", f"{configured} (from the config)"))
    elif project and project != "(unset)":
        found.append(
            Finding(True, "gcp project", f"{project} (gcloud default; set `project` in the config)")
        )
    else:
        found.append(
            Finding(
                False,
                "gcp project",
                "set `project` in [backends.gce] or `gcloud config set project`",
            )
        )
    checkout = section.opt_str("base_checkout")
    if checkout and not (Path(checkout).expanduser() / "cluster" / "kube-up.sh").is_file():
        found.append(
            Finding(
                False,
                "base_checkout",
                f"{checkout} has no cluster/kube-up.sh; point it at a Kubernetes checkout",
            )
        )
    return found
