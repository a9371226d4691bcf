"""What a backend did beyond the candidate's own scripts, for the report (backends.base):
its adaptations to today's infrastructure, and the build fixes each candidate was built with.

Its own module: the backend contract names it and the report holds it, and neither has
to load the other (the report's model costs ~13 ms of every command's start; the
package's __init__ loads nothing).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Adaptation:
    """What the backend did beyond the candidate's own scripts so they run on today's
    infrastructure (the gce backend on 2026 GCP), and why."""

    name: str  # e.g. "network"
    why: str
    commands: list[str]  # the commands, as --dry-run prints them


# What a candidate's build did beyond `go build` of its tree, written beside the
# evaluation by a backend that builds (procs) and shown by the report with that evaluation.
BUILD_FIXES = "build-fixes.json"
FROM_CONFIG = "config"  # a [[backends.procs.build_fixes]] of the user's configuration
FROM_TREE = "tree"  # a step of the tree's own build, read from the tree


@dataclass(frozen=True)
class BuildFixApplied:
    """One change a candidate was built with: a configured fix, or a step of the tree's own
    build (generated files it does not commit, a staging link a PR commit lacks, ...)."""

    name: str
    why: str
    source: str  # FROM_CONFIG or FROM_TREE
    commands: list[str]  # as --dry-run prints them
    range: str = ""  # a configured fix's range (`since`/`until`), when it has one

    def describe(self) -> str:
        whose = "from the tree's own build" if self.source == FROM_TREE else "configured fix"
        return f"{self.name} ({whose})"


def write_build_fixes(eval_dir: Path, applied: list[BuildFixApplied]) -> None:
    eval_dir.mkdir(parents=True, exist_ok=True)
    records = [asdict(a) for a in applied]
    (eval_dir / BUILD_FIXES).write_text(json.dumps(records, indent=1) + "\n")


def read_build_fixes(eval_dir: Path) -> list[BuildFixApplied]:
    """The changes an evaluation's build applied; [] when it wrote none (a backend that
    does not build, a build that failed first) or the file cannot be read."""
    try:
        records = json.loads((eval_dir / BUILD_FIXES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(records, list):
        return []
    found = []
    for r in records:
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            found.append(
                BuildFixApplied(
                    name=r["name"],
                    why=str(r.get("why", "")),
                    source=str(r.get("source", FROM_CONFIG)),
                    commands=[str(c) for c in r.get("commands", []) if isinstance(c, str)],
                    range=str(r.get("range", "")),
                )
            )
    return found
