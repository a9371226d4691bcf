"""tests/data/k8s: the real API answers scripts/record_k8s_answers.py recorded are all there,
described, and readable by the official client's object model (what the executor's tests
will build on)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kubernetes import client as k

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "k8s"


def _script() -> ModuleType:
    path = ROOT / "scripts" / "record_k8s_answers.py"
    spec = importlib.util.spec_from_file_location("record_k8s_answers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["record_k8s_answers"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


SCENARIOS = [s.name for s in _script().SCENARIOS]


def _load(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / f"{name}.json").read_text()))


def test_every_scenario_is_recorded_and_described() -> None:
    recorded = sorted(p.stem for p in DATA.glob("*.json"))
    assert recorded == sorted(SCENARIOS)
    readme = (DATA / "README.md").read_text()
    described = set(re.findall(r"^\| `([a-z-]+)\.json` \|", readme, re.MULTILINE))
    assert described == set(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_recordings_load_into_the_clients_models(name: str) -> None:
    doc = _load(name)
    assert doc["scenario"] == name
    assert doc["cluster"]["server"].startswith("v1.32")
    if isinstance(doc.get("job"), dict) and doc["job"].get("kind") == "Job":
        assert k.V1Job.from_dict(doc["job"]) is not None
    for pod in doc.get("pods", []):
        assert k.V1Pod.from_dict(pod) is not None
    times = [e["t"] for e in doc["watch_events"]]
    assert times == sorted(times)
    for event in doc["watch_events"]:
        model = k.V1Job if event["watch"] == "jobs" else k.V1Pod
        assert event["type"] in ("ADDED", "MODIFIED", "DELETED")
        assert model.from_dict(event["object"]) is not None


def test_the_evicted_pod_carries_the_disruption_condition_and_the_deleted_one_does_not() -> None:
    """The two faults the executor must tell apart read as the README says."""

    def conditions(name: str) -> set[str]:
        pods = [e["object"] for e in _load(name)["watch_events"] if e["watch"] == "pods"]
        return {c["type"] for c in pods[-1]["status"].get("conditions") or []}

    assert "DisruptionTarget" in conditions("evicted")
    assert "DisruptionTarget" not in conditions("pod-deleted")
