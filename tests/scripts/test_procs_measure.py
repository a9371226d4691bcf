"""scripts/procs_measure.py: `make real`'s check holds every run to the side it expects."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "procs_measure", ROOT / "scripts" / "procs_measure.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("procs_measure", module)
    spec.loader.exec_module(module)
    return module


def test_a_skipped_run_is_said_as_a_skip_with_its_reason_not_as_a_side_of_the_threshold() -> None:
    reason = "launch: starting hollow nodes 75-99 failed (timed out after 30s)"
    line = _script()._off_side("1444d25", 1, {"value": None, "reason": reason}, "good")
    assert line == f"1444d25 run 1: skipped ({reason}), expected good"


def test_a_measured_run_on_the_wrong_side_names_its_value_and_the_side() -> None:
    line = _script()._off_side("f93a270^", 2, {"value": 1243.0, "reason": ""}, "good")
    assert line == "f93a270^ run 2: 1243.0 (at or above the threshold, expected good)"
    line = _script()._off_side("f93a270", 1, {"value": 3.0, "reason": ""}, "bad")
    assert line == "f93a270 run 1: 3.0 (below the threshold, expected bad)"
