"""The backends' names, for help texts: importable without any backend or the registry
(`bisector score` starts without them; registry.BACKENDS lists the same, tested)."""

from __future__ import annotations

BACKEND_NAMES = ("sim", "local", "kind", "gce", "procs")


def backend_names() -> str:
    """`sim, local, kind, gce or procs`, for help texts and errors."""
    return ", ".join(BACKEND_NAMES[:-1]) + " or " + BACKEND_NAMES[-1]
