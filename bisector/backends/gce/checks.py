"""What `bisector doctor` checks for the gce backend beyond its tools.

gcloud login and project (a placeholder like the shipped configs' "my-gcp-project"
is a problem); docker credentials for the registry hosts the slots push the
hollow-node image to (start-kubemark.sh runs `gcloud docker -- push`; docker
needs gcloud as credential helper for them); the ssh key `gcloud compute ssh`
and `scp` use (without it gcloud stops to ask for a passphrase in the middle of
a run); the base checkout. gsutil and python are in the tool list (kube-up.sh
stages the release tars with gsutil; the 2017 scripts call `python`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from bisector import proc
from bisector.backends.gce import adapt as gce_adapt
from bisector.backends.gce import preflight as gce_preflight
from bisector.backends.gce import steps as gce_steps
from bisector.backends.gce.options import PLACEHOLDER_PROJECTS
from bisector.backends.gce.steps import REGISTRY_HOSTS
from bisector.backends.registry import Finding
from bisector.config import Section
from bisector.errors import BisectorError

_TIMEOUT_S = 30.0


def _gcloud(*args: str) -> str | None:
    try:
        return proc.run(["gcloud", *args], timeout=_TIMEOUT_S).stdout.strip()
    except proc.CommandError:
        return None


def check(section: Section, tree: Path | None = None) -> list[Finding]:
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
    if configured in PLACEHOLDER_PROJECTS:
        found.append(
            Finding(
                False,
                "gcp project",
                f"{configured!r} is the example's placeholder; set `project` in "
                "[backends.gce] to your GCP project",
            )
        )
    elif configured:
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
    found.append(_gcloud_components())
    found.append(_python_distutils())
    found.append(_docker_auth())
    found.append(_ssh_key())
    checkout = section.opt_str("base_checkout")
    if checkout and not (Path(checkout).expanduser() / "cluster" / "kube-up.sh").is_file():
        found.append(
            Finding(
                False,
                "base_checkout",
                f"{checkout} has no cluster/kube-up.sh; point it at a Kubernetes checkout",
            )
        )
    if account and configured and configured not in PLACEHOLDER_PROJECTS:
        found += preflight(section)
    return found


def preflight(section: Section) -> list[Finding]:
    """The backend's preflight (read-only gcloud calls, gce_preflight) for slot 0: quotas,
    network, Artifact Registry repository, images, org policies, staging bucket, cfssl.
    Without a gcloud account it is not run (its calls would only fail)."""
    try:
        cfg = gce_steps.GceSettings.from_section(section, Path(".bisector-doctor"))
    except BisectorError:
        return []  # doctor's config check says what is wrong with it
    ready = gce_preflight.check(
        cfg,
        gce_steps.network(cfg, 0),
        gce_steps.registry(0),
        gce_adapt.registry_location(0),
        path=cfg.env.get("PATH"),
    )
    return [
        Finding(f.ok, f"preflight {f.what}", f.detail if f.known else f"{f.detail}; "
                "gcloud must be able to read it (permission, API enabled)")
        for f in ready.findings
    ]  # fmt: skip


def _docker_config() -> Path:
    base = os.environ.get("DOCKER_CONFIG")
    return (Path(base) if base else Path.home() / ".docker") / "config.json"


def _docker_auth() -> Finding:
    what = "docker auth to gcr.io"
    fix = f"run `gcloud auth configure-docker {','.join(REGISTRY_HOSTS)}`"
    path = _docker_config()
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Finding(False, what, f"{path} does not exist; {fix}")
    except (OSError, ValueError) as exc:
        return Finding(False, what, f"{path} cannot be read ({exc}); {fix}")
    helpers = config.get("credHelpers") if isinstance(config, dict) else None
    helpers = helpers if isinstance(helpers, dict) else {}
    missing = [h for h in REGISTRY_HOSTS if h not in helpers]
    if missing:
        return Finding(False, what, f"no credential helper for {', '.join(missing)}; {fix}")
    absent = sorted({str(helpers[h]) for h in REGISTRY_HOSTS} - _helpers_on_path(helpers))
    if absent:
        return Finding(
            False, what, f"docker-credential-{absent[0]} is not on PATH; install the Cloud SDK"
        )
    return Finding(True, what, f"{', '.join(REGISTRY_HOSTS)} via {path}")


def _helpers_on_path(helpers: dict[str, object]) -> set[str]:
    return {str(h) for h in helpers.values() if shutil.which(f"docker-credential-{h}")}


def _ssh_key() -> Finding:
    key = Path.home() / ".ssh" / "google_compute_engine"
    if key.is_file() and key.with_suffix(".pub").is_file():
        return Finding(True, "gcloud ssh key", str(key))
    return Finding(
        False,
        "gcloud ssh key",
        f"{key} is missing: gcloud compute ssh/scp would stop to ask for a passphrase; "
        f"run `ssh-keygen -t rsa -N '' -f {key}`",
    )


# cluster/common.sh `update-or-verify-gcloud` (kubernetes 7043372 and 1444d25), run by
# kube-up.sh and kube-down.sh: `gcloud version --format=json` must list these components,
# and `python -c 'from distutils import version ...'` must work (distutils left Python 3.12).
REQUIRED_COMPONENTS = ("alpha", "beta", "core")


def _gcloud_components() -> Finding:
    what = "gcloud components"
    text = _gcloud("version", "--format=json")
    try:
        versions = json.loads(text or "")
    except ValueError:
        return Finding(False, what, "`gcloud version --format=json` gave no JSON")
    missing = [
        c for c in REQUIRED_COMPONENTS if not (isinstance(versions, dict) and versions.get(c))
    ]
    if missing:
        return Finding(
            False, what, f"kube-up.sh needs {', '.join(missing)}: run "
            f"`gcloud components install {' '.join(missing)}`",
        )  # fmt: skip
    return Finding(True, what, ", ".join(REQUIRED_COMPONENTS))


def _python_distutils() -> Finding:
    what = "python for the 2017 scripts"
    try:
        proc.run(["python", "-c", "from distutils import version"], timeout=_TIMEOUT_S)
    except proc.CommandError as exc:
        return Finding(
            False, what, f"`python -c 'from distutils import version'` {exc.why}: kube-up.sh "
            "needs a `python` with distutils (Python <= 3.11, or setuptools installed)",
        )  # fmt: skip
    return Finding(True, what, "`python` has distutils")
