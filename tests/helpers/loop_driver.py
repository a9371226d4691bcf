"""A minimal stand-in for the run loop's contract with a backend.

build -> launch -> warmup -> collect; an InfraError at any step is a skip with
its reason; teardown runs exactly once whenever launch was attempted, also
when a KeyboardInterrupt (Ctrl-C) or any other exception passes through.
The real loop (bisector run) replaces this in integration tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Backend, Candidate
from bisector.errors import InfraError


@dataclass
class Outcome:
    status: str  # "measured" or "skip"
    reason: str = ""
    logs: list[Path] = field(default_factory=list)


def evaluate(backend: Backend, candidate: Candidate) -> Outcome:
    try:
        backend.build(candidate)
    except InfraError as exc:
        return Outcome("skip", exc.reason)
    try:
        backend.launch(candidate)
        backend.warmup(candidate)
        return Outcome("measured", logs=backend.collect(candidate))
    except InfraError as exc:
        return Outcome("skip", exc.reason)
    finally:
        backend.teardown(candidate)
