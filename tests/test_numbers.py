"""Numbers a person reads (issue 22, point 5): significant figures that fit the metric."""

from __future__ import annotations

import pytest

from bisector.numbers import (
    NO_VALUE,
    Unit,
    format_number,
    format_threshold,
    format_value,
    unit_of,
)


@pytest.mark.parametrize(
    ("value", "metric", "shown"),
    [
        (213676.0, "conflicts", "213,676"),  # counts whole, with thousands marked
        (1549982.0, "conflicts", "1,549,982"),  # was 1.54998e+06 with :g
        (12.5, "conflicts", "12.5"),  # a median of two runs keeps its half
        (27.7128, "conflicts_per_min", "27.7/min"),  # a rate: three figures and its unit
        (35.0, "conflicts_per_min", "35/min"),
        (35.029, "conflicts_per_min", "35.0/min"),
        (23.123, "cacher_saturated_after_s", "23.1 s"),  # seconds with their unit
        (161.998, "cacher_saturated_after_s", "2m42s"),
        (0.0416, "dispatch_lag_s", "0.0416 s"),
        (12.345, "latency_ms", "12.3 ms"),
        (2614.89, "something_new", "2,615"),  # unknown: whole from 100 up
        (0.5, "something_new", "0.500"),
        (None, "conflicts", NO_VALUE),
    ],
)
def test_values_are_written_as_their_unit_asks(
    value: float | None, metric: str, shown: str
) -> None:
    assert format_value(value, metric) == shown


def test_a_count_threshold_is_rounded_up_which_decides_exactly_as_it_does() -> None:
    # 2614.89 was printed whole ("2614.89"); whole counts are >= 2614.89 iff >= 2615.
    assert format_threshold(2614.89, "conflicts") == "2,615"
    assert format_threshold(50000.0, "conflicts") == "50,000"
    for count in (2614, 2615, 2616):
        assert (count >= 2614.89) == (count >= 2615)
    assert format_threshold(27.7128, "conflicts_per_min") == "27.7/min"


def test_units_come_from_the_metric_name() -> None:
    assert unit_of("node_writes") is Unit.COUNT
    assert unit_of("conflicts_per_min") is Unit.PER_MINUTE
    assert unit_of("dispatch_lag_s") is Unit.SECONDS
    assert unit_of("pod_binding_errors") is Unit.NUMBER


def test_plain_numbers() -> None:
    assert [format_number(v) for v in (3.0, 37.5, 999.4, 0.000012)] == [
        "3",
        "37.5",
        "999",
        "1.2e-05",
    ]
