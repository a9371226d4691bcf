"""A GCE twin: fake gcloud, gsutil, docker, curl, ssh/scp and make that keep state.

It lets the real 2017 scripts (cluster/kube-up.sh, test/kubemark/start-kubemark.sh,
stop-kubemark.sh, cluster/kube-down.sh) and bisector's gce backend run end to
end without a cloud: `install(home, ...)` writes the shims into `home/bin`; put
that directory first on PATH. Every call is recorded in `home/calls.jsonl`; a
call the twin does not model exits 97 with `bisector twin: unmodelled call: ...`
on stderr, so a script that starts doing something new fails loudly instead of
being answered wrongly.

The twin's kubemark master serves an apiserver log produced by the `sim` model:
the fake `make quick-release` decides a candidate's profile (trees containing
any `bad_if_contains` commit get `bad_profile`, the rest `good_profile`), so a
whole `bisector run` on the twin names a culprit. Users can rehearse a config's
command sequence this way before spending money:

    python -m bisector.twin install TWIN --project my-project \
        --bad-if-contains f93a270
    PATH=TWIN/bin:$PATH bisector run --config ... --good G --bad B
    python -m bisector.twin leftovers TWIN     # what would still be billed

A layer of its own, above the product: it imports the gce backend (to rehearse it)
and the sim (the log its master serves); nothing in the product imports it, so none
of it loads in a real run. `bisector doctor --rehearse` reaches `doctor_rehearsal`
through the registry's "module:function" string (tests/test_import_graph.py holds
both sides of that line).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.twin.state import Home

SHIMS = ("gcloud", "gsutil", "docker", "curl", "ssh", "scp", "make", "kubectl")
# cfssl and cfssljson as a machine prepared for the 2017 scripts has them on PATH (their
# download from pkg.cfssl.org/R1.2 is gone; docs/gce-2026.md): `cfssl_installed = False`
# models a machine without them.
CFSSL_SHIMS = ("cfssl", "cfssljson")
# The images the 2017 scripts name (cluster/gce/config-default.sh GCI_VERSION and
# cluster/kubemark/gce/config-default.sh MASTER_IMAGE at kubernetes 1444d25 and 7043372),
# present in the twin's cos-cloud by default. Whether GCE still has them could not be
# checked; `bisector doctor` asks the real project.
DEFAULT_IMAGES: dict[str, list[str]] = {"cos-cloud": ["cos-beta-59-9460-20-0"]}
# The bad profile's default: the node cacher without its trigger index, with a
# dispatch cost per watcher that makes 500 hollow nodes show what 5000 showed in 2017.
DEFAULT_BAD_PROFILE: dict[str, Any] = {"trigger_index": False, "dispatch_per_watcher_us": 60.0}
UNMODELLED_EXIT = 97


@dataclass(frozen=True)
class TwinConfig:
    project: str = "twin-project"
    bad_if_contains: tuple[str, ...] = ()
    bad_profile: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_BAD_PROFILE))
    good_profile: dict[str, Any] = field(default_factory=dict)
    log_duration: str = "20m"  # simulated cluster time one served apiserver log covers
    noise: float = 0.0
    seed: int = 0
    # The project as GCE would have it (twin.gce_api, twin.faults):
    faults: tuple[dict[str, Any], ...] = ()
    quotas: dict[str, Any] = field(default_factory=dict)  # {"regions": {R: {M: L}}, "project"}
    images: dict[str, list[str]] = field(default_factory=lambda: dict(DEFAULT_IMAGES))
    org_policies: tuple[str, ...] = ()  # enforced boolean constraints, e.g. storage.
    repositories: tuple[str, ...] = ()  # Artifact Registry repos that exist: "LOCATION/NAME"
    cfssl_installed: bool = True


def install(path: Path, config: TwinConfig) -> Home:
    """Write the shims and settings into `path` (a fresh or existing twin home)."""
    home = Home(path)
    home.bin.mkdir(parents=True, exist_ok=True)
    settings = {
        "project": config.project,
        "bad_if_contains": list(config.bad_if_contains),
        "bad_profile": config.bad_profile,
        "good_profile": config.good_profile,
        "log_duration": config.log_duration,
        "noise": config.noise,
        "seed": config.seed,
        "faults": list(config.faults),
        "quotas": config.quotas,
        "images": config.images,
        "org_policies": list(config.org_policies),
    }
    home.settings_file.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    with home.locked() as state:
        for repo in config.repositories:
            location, _, name = repo.partition("/")
            state.kind("repositories")[repo] = {
                "name": f"projects/{config.project}/locations/{location}/repositories/{name}",
                "format": "DOCKER",
            }
    for name in (*SHIMS, *(CFSSL_SHIMS if config.cfssl_installed else ())):
        shim = home.bin / name
        shim.write_text(
            "#!/bin/sh\n# bisector GCE twin\n"
            f'exec "{sys.executable}" -m bisector.twin '
            f'--home "{home.path}" shim {name} "$@"\n',
            encoding="utf-8",
        )
        shim.chmod(0o755)
    return home


def leftovers(path: Path) -> dict[str, list[str]]:
    """What the twin's project still holds that a real one would bill."""
    return Home(path).load().leftovers()
