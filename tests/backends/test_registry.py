"""The registry says once which backends can hand over a ClusterLoader2 report (a `cl2`
metric's source): local (every command gets $BISECTOR_REPORT_DIR), kind with a `workload`
(only that step gets it: bisector/backends/kind/steps.py `workload`); never sim, gce
(the 2017 kubemark scripts) or procs. Which backends exist is not listed here:
tests/backends/test_base_conformance.py runs over every registered one."""

from __future__ import annotations

import pytest

from bisector.backends.registry import backend_info
from bisector.config import Section


def _section(**keys: str) -> Section:
    return Section(dict(keys), "bisector.toml", "backends.x")


@pytest.mark.parametrize(
    ("backend", "keys"),
    [("local", {}), ("local", {"workload": "clusterloader2"}), ("kind", {"workload": "cl2"})],
)
def test_backends_that_can_give_a_cl2_report(backend: str, keys: dict[str, str]) -> None:
    assert backend_info(backend).cl2_problem(_section(**keys)) is None


def test_kind_without_a_workload_gives_none_and_says_which_key_would() -> None:
    why = backend_info("kind").cl2_problem(_section(image="kindest/node"))
    assert why == (
        "[backends.kind] sets no workload: nothing writes a CL2 report "
        "(e.g. clusterloader2 --report-dir=...)"
    )


@pytest.mark.parametrize("backend", ["sim", "gce", "procs"])
def test_backends_that_never_run_cl2(backend: str) -> None:
    why = backend_info(backend).cl2_problem(_section(workload="ignored"))
    assert why == f"the {backend} backend runs no ClusterLoader2 workload: it has no CL2 report"
