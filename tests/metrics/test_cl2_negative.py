"""A CL2 value just below zero is no measurement (issue 30, the mutation audit).

Latencies, counts and throughputs are never negative; CL2 writes -1 nowhere as "none"
in the summaries read here (perftype.go DataItem: measured values), so any negative
value, however close to 0, is a damaged or edited summary: no value. 0 itself is a
measurement (no pods scheduled, no latency observed)."""

from __future__ import annotations

import json

import pytest

from bisector.errors import CollectError
from bisector.metrics.cl2 import value_from


def _throughput(value: float) -> str:
    return json.dumps({"perc50": 1.0, "perc90": 1.0, "perc99": 1.0, "max": value})


@pytest.mark.parametrize("value", [-1.0, -0.5, -1e-9])
def test_a_cl2_value_in_minus_one_to_zero_is_no_value(value: float) -> None:
    with pytest.raises(CollectError, match="negative"):
        value_from(_throughput(value), "SchedulingThroughput_load_x.json", {}, "max")


def test_a_cl2_value_of_zero_is_a_measurement() -> None:
    assert value_from(_throughput(0.0), "SchedulingThroughput_load_x.json", {}, "max").value == 0
