"""A kubemark simulator: the apiserver's node path as a discrete-event model, and the demo's
synthetic history whose commits carry its profiles (demo_repo.py)."""

from __future__ import annotations

from bisector.sim.model import RunParams, SimRun, SimSummary, simulate
from bisector.sim.profile import ProfileError, SimProfile, load_profile, render_profile

__all__ = [
    "ProfileError",
    "RunParams",
    "SimProfile",
    "SimRun",
    "SimSummary",
    "load_profile",
    "render_profile",
    "simulate",
]
