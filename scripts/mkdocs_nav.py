"""mkdocs hook: the site's navigation from the pages docs/ holds.

Known pages come first, in reading order, when they exist (a page not there is left out,
never an error); every other page of docs/ follows, by file name, so pages added by
other work are in the navigation without an edit here. Links between pages are still
checked by `mkdocs build --strict` (a link to a page that does not exist fails).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

READING_ORDER = (
    "index.md",
    "demo.md",
    "bisecting.md",
    "scoring.md",
    "metrics.md",
    "report.md",
    "cost.md",
    "gce.md",
    "gce-2026.md",
    "kind.md",
    "procs.md",
    "jobs.md",
    "jobs-faults.md",
    "jobs-cluster.md",
    "failures.md",
    "ci-history.md",
    "history.md",
    "nightly.md",
    "doctor.md",
    "cli.md",
    "json.md",
    "architecture.md",
    "testing.md",
)


def navigation(docs: Path) -> list[str]:
    """The pages under `docs`, known ones in reading order, then the rest by name."""
    present = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    known = [page for page in READING_ORDER if page in present]
    return known + [page for page in present if page not in READING_ORDER]


def on_config(config: Any) -> Any:
    config["nav"] = navigation(Path(config["docs_dir"]))
    return config
