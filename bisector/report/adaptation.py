"""What a backend did beyond the candidate's own scripts, for the report (backends.base).

Its own module: the backend contract names it and the report holds it, and neither has
to load the other (the report's model costs ~13 ms of every command's start; the
package's __init__ loads nothing).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Adaptation:
    """What the backend did beyond the candidate's own scripts so they run on today's
    infrastructure (the gce backend on 2026 GCP), and why."""

    name: str  # e.g. "network"
    why: str
    commands: list[str]  # the commands, as --dry-run prints them
