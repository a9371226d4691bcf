"""What `bisector doctor` checks for the kind backend beyond its tools.

- kind >= v0.11.0: older kind takes no source directory in `kind build node-image`
  (its command has `Args: cobra.NoArgs`), so every candidate's build would fail.
- `arch` is the docker host's architecture: the node image and the kubemark image
  are built for `arch`, and the cluster runs on this docker host.
Output `bisector doctor` cannot read is left to the tool check, not called a problem.
"""

from __future__ import annotations

import re
from pathlib import Path

from bisector import proc
from bisector.backends.kind.steps import ARCHES
from bisector.backends.registry import Finding
from bisector.config import Section
from bisector.errors import ConfigError

_TIMEOUT_S = 30.0
MIN_KIND = (0, 11, 0)
# `kind version` prints `kind v0.11.0 go1.16.4 linux/amd64` (DisplayVersion), or with a
# pre-release `kind v0.33.0-alpha+fed2688... go... linux/arm64`.
_KIND_VERSION = re.compile(r"\bv(\d+)\.(\d+)\.(\d+)")


def _output(*cmd: str) -> str | None:
    try:
        return proc.run(list(cmd), timeout=_TIMEOUT_S).stdout.strip()
    except proc.CommandError:
        return None


def kind_version(text: str) -> tuple[int, int, int] | None:
    match = _KIND_VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def check(section: Section, tree: Path | None = None) -> list[Finding]:
    found: list[Finding] = []
    shown = _output("kind", "version")
    version = kind_version(shown) if shown else None
    if version is not None:
        text = "v{}.{}.{}".format(*version)
        if version < MIN_KIND:
            found.append(
                Finding(
                    False,
                    "kind version",
                    f"kind {text} cannot build a node image from a source directory; "
                    "install kind >= v0.11.0",
                )
            )
        else:
            found.append(Finding(True, "kind version", f"{text} (>= v0.11.0)"))
    try:
        arch = section.get_str("arch", "amd64")
    except ConfigError:
        return found  # the config check reports it
    host = _output("docker", "version", "--format", "{{.Server.Arch}}")
    if host in ARCHES and host != arch:
        found.append(
            Finding(
                False,
                "arch",
                f"the docker host is {host} but `arch` is {arch}: set arch = {host!r} in "
                "[backends.kind] (node and kubemark images must run on this host)",
            )
        )
    elif host == arch:
        found.append(Finding(True, "arch", f"{arch} (the docker host's)"))
    return found
