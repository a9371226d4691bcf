"""The issue's figures at full size: 5000 hollow nodes for 30 simulated minutes.

Each run costs tens of seconds, so the two runs happen once per module and the
log goes to /dev/null; test_model.py checks on smaller runs that the summary's
counts are exactly what the written log holds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bisector.sim import RunParams, SimProfile, SimSummary, simulate

pytestmark = pytest.mark.slow
PARAMS = RunParams(nodes=5000, duration_s=1800.0, seed=1)


@pytest.fixture(scope="module")
def healthy() -> SimSummary:
    return simulate(SimProfile(), PARAMS, Path(os.devnull))


@pytest.fixture(scope="module")
def regressed() -> SimSummary:
    return simulate(SimProfile(trigger_index=False), PARAMS, Path(os.devnull))


def test_healthy_cluster_keeps_up(healthy: SimSummary) -> None:
    assert healthy.conflicts < 0.01 * healthy.node_patches
    assert healthy.hwm < 100
    assert healthy.lag_max_s < 1.0


def test_without_trigger_index_the_node_cacher_falls_behind(
    healthy: SimSummary, regressed: SimSummary
) -> None:
    assert regressed.saturated_at_s is not None and regressed.saturated_at_s <= 120
    lag = regressed.lag_by_minute
    assert lag[-1] >= 60
    # roughly linear growth: equal steps over each third of the run
    steps = [lag[19] - lag[9], lag[29] - lag[19]]
    assert all(step > 0 for step in steps)
    assert 0.7 < steps[0] / steps[1] < 1.3
    assert regressed.conflicts >= 100 * max(healthy.conflicts, 1)
    assert regressed.node_writes < healthy.node_writes  # back-pressure: 409s are not writes
