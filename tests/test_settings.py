"""bisector/settings.py: one road from the settings to a backend."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bisector"


def _calls_of(name: str) -> list[str]:
    """`module:line` of every call of `name` in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Name) and called.id == name:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{called.lineno}")
    return found


def test_every_backend_context_is_built_by_run_settings() -> None:
    # The run, its preflight, doctor, a nightly job's load and the gce rehearsal each
    # built their own, and doctor's had no warmup and no looks: a backend's check of
    # them passed there and failed in the run.
    calls = _calls_of("BackendContext")
    assert [c for c in calls if not c.startswith("bisector/settings.py:")] == []
    assert len(calls) == 1, calls  # RunSettings.backend_context
