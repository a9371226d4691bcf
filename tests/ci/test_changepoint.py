from __future__ import annotations

import math

import numpy as np
import pytest

from bisector.ci.changepoint import (
    MAX_P_VALUE,
    find_change_points,
    find_step,
    newest_regression,
    noise_scale,
    p_value_text,
    significance,
    supported,
)
from tests.helpers.ci_history import incident_history
from tests.helpers.series import cl2_series

GOOD, BAD = 4_449.0, 1_549_982.0


def test_clean_step_with_given_threshold() -> None:
    step = find_step([GOOD, GOOD, 8_688.0, BAD, BAD, BAD], threshold=50_000)
    assert step is not None
    assert (step.last_good, step.first_bad) == (2, 3)
    assert step.threshold_source == "given"


def test_threshold_found_between_the_sides_when_not_given() -> None:
    step = find_step([GOOD, 5_000.0, 4_000.0, BAD, 1_400_000.0])
    assert step is not None
    assert (step.last_good, step.first_bad) == (2, 3)
    assert step.threshold_source == "change point"
    assert 5_000 < step.threshold < 1_400_000
    assert step.before == 4_449.0
    assert step.after == pytest.approx((BAD + 1_400_000) / 2)


@pytest.mark.parametrize(
    "values",
    [
        [GOOD, GOOD, BAD, GOOD, GOOD, GOOD],  # lone outlier in the middle
        [GOOD, GOOD, GOOD, GOOD, BAD],  # lone outlier at the end: wait for the next run
        [GOOD, GOOD, GOOD, GOOD],
        [BAD, BAD, BAD],  # no good run to start from
        [GOOD, 1.2 * GOOD, 0.9 * GOOD, 1.1 * GOOD],  # noise, no step
    ],
)
def test_no_step(values: list[float]) -> None:
    assert find_step(values) is None
    assert find_step(values, threshold=50_000) is None


def test_runs_without_data_are_passed_over() -> None:
    step = find_step([GOOD, None, GOOD, None, BAD, BAD], threshold=50_000)
    assert step is not None
    assert (step.last_good, step.first_bad) == (2, 4)


def test_tied_splits_widen_the_range() -> None:
    # G G B G B B: either run 2 or run 3 is the noisy one; the range covers both.
    step = find_step([GOOD, GOOD, BAD, GOOD, BAD, BAD], threshold=50_000)
    assert step is not None
    assert (step.last_good, step.first_bad) == (1, 4)


def test_noisy_good_run_after_the_step_does_not_hide_it() -> None:
    step = find_step([GOOD, GOOD, GOOD, BAD, BAD, GOOD, BAD, BAD], threshold=50_000)
    assert step is not None
    assert (step.last_good, step.first_bad) == (2, 3)


# --- change points (ruptures + the robust test) ----------------------------------------------


def incident_values() -> list[float | None]:
    """Conflicts of runs 427..447 as `bisector history` reads them (None: no logs, --v=2)."""
    return [float(r.conflicts) if r.logs and r.verbosity >= 3 else None for r in incident_history()]


def test_the_2017_table_names_the_range_of_the_readme() -> None:
    values = incident_values()
    [point] = find_change_points(values)
    run = [r.run for r in incident_history()]
    assert (run[point.last_before], run[point.index], run[point.first_after]) == (442, 446, 446)
    assert (point.before, point.after) == (53.5, 342.0)  # medians; 433's 520 is in `before`
    assert point.regression and point.direction == "regression"
    assert point.p_value is not None and point.p_value < MAX_P_VALUE
    # The step and its threshold are the hand-written finder's (geometric midpoint).
    step = find_step(values)
    assert step is not None
    assert (step.last_good, step.first_bad, step.threshold_source) == (15, 19, "change point")
    assert step.threshold == pytest.approx(131.2311)  # the hand-written finder's (82c7c37)
    assert step.p_value == point.p_value


def test_two_planted_steps_are_both_found_and_the_newest_is_hunted() -> None:
    values = cl2_series(np.random.default_rng(3), 60, [(20, 1.5), (40, 1.35)])
    points = find_change_points(values)
    assert [p.index for p in points] == [20, 40]
    assert all(p.regression and p.p_value is not None and p.p_value < 1e-3 for p in points)
    assert [p.change or 0 for p in points] == [pytest.approx(0.5, abs=0.15)] * 2
    newest = newest_regression(points)
    assert newest is points[1]
    assert newest.last_before < 40 <= newest.first_after
    step = find_step(values)
    assert step is not None and (step.last_good, step.first_bad) == (
        newest.last_before,
        newest.first_after,
    )


def test_a_regression_and_its_fix_are_two_change_points_and_the_regression_is_hunted() -> None:
    values = cl2_series(np.random.default_rng(4), 60, [(20, 1.5), (40, 1 / 1.5)])
    points = find_change_points(values)
    assert [(p.index, p.direction) for p in points] == [(20, "regression"), (40, "improvement")]
    assert newest_regression(points) is points[0]


def test_direction_follows_the_metric() -> None:
    # Scheduling throughput: higher is better, a 30 % drop is the regression.
    values = cl2_series(np.random.default_rng(5), 40, [(20, 0.7)], base=100.0)
    [down] = find_change_points(values, higher_is_worse=False)
    assert (down.index, down.direction) == (20, "regression")
    assert down.last_before < 20 <= down.first_after
    assert find_step(values, higher_is_worse=False) is not None
    # Read as a latency, the same drop is an improvement: nothing to hunt.
    [same] = find_change_points(values)
    assert (same.index, same.direction) == (20, "improvement")
    assert find_step(values) is None
    # A given threshold is bad at or *below* it when lower is worse.
    step = find_step([100.0, 98.0, 70.0, 69.0], threshold=70.0, higher_is_worse=False)
    assert step is not None and (step.last_good, step.first_bad) == (1, 2)


@pytest.mark.parametrize("seed", range(5))
def test_noise_alone_has_no_change_point(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    assert find_change_points(cl2_series(rng, 40, [])) == []
    assert find_change_points(cl2_series(rng, 200, [])) == []


def test_lone_outliers_are_not_levels_and_do_not_hide_the_step() -> None:
    values = cl2_series(np.random.default_rng(6), 40, [(20, 1.5)], gaps=0.0)
    for spot in (5, 13, 30):  # x3 spikes, one run each, apart
        values[spot] = 3 * (values[spot] or 0.0)
    points = find_change_points(values)
    assert [p.index for p in points] == [20]


@pytest.mark.parametrize(
    "values",
    [
        [40.0, 41, 39, 42, 40, 41, 120, 40, 39, 41],  # a spike beside an ordinary run
        [40.0, 41, 39, 42, 40, 41, 40, 39, 41, 120],  # a lone bad run at the end: wait
    ],
)
def test_a_lone_bad_run_is_no_change_point(values: list[float]) -> None:
    assert find_change_points(values) == []


def test_two_bad_runs_at_the_end_are_a_step() -> None:
    values = [40.0, 41, 39, 42, 40, 41, 40, 39, 70, 72]
    [point] = find_change_points(values)
    assert (point.last_before, point.index, point.first_after) == (7, 8, 8)


def test_a_noisy_run_at_the_step_widens_the_range_instead_of_missing_the_culprit() -> None:
    # Throughput 100 -> 70 with 5 % noise; run 20 is the first at 70, but noise put it
    # just above the midpoint (84): it looks old, so the range must reach back past it.
    values = cl2_series(np.random.default_rng(7), 40, [(20, 0.7)], base=100.0, sigma=0.05)
    values[20] = math.sqrt(100 * 70) * 1.03
    [point] = find_change_points(values, higher_is_worse=False)
    assert point.index in (20, 21)
    assert point.last_before < 20 <= point.first_after
    assert point.first_after - point.last_before <= 3


def test_short_series_keep_the_two_x_rule_without_a_p_value() -> None:
    # Runs 442..447 of the incident: one good run, three without data, two bad ones.
    values = incident_values()[15:]
    [point] = find_change_points(values)
    assert (point.last_before, point.first_after, point.p_value) == (0, 4, None)
    assert p_value_text(point.p_value) == "too few runs for a p-value (a 2x step)"
    assert (p_value_text(0.00123), p_value_text(0.0)) == ("p=0.0012", "p<1e-12")
    assert find_change_points([40.0, 50, 45, 70, 75]) == []  # under 2x: nothing
    assert find_change_points([100.0, 40, 45], higher_is_worse=False)[0].regression


@pytest.mark.parametrize(
    "values",
    [
        [],
        [None, None],
        [40.0] * 12,  # no noise at all: the floor keeps the test finite
        [0.0] * 6 + [500.0] * 6,  # a level of 0: the change is not a ratio
        [40.0, math.nan, 41, math.inf, 39, 40, -math.inf, 42, 40, 41],
    ],
)
def test_degenerate_series_never_raise(values: list[float | None]) -> None:
    points = find_change_points(values)
    for point in points:
        assert point.change is None or math.isfinite(point.change)
        assert values[point.last_before] is not None and values[point.first_after] is not None


def test_non_finite_values_are_no_data_even_against_a_threshold() -> None:
    # A NaN compares false with everything: as a value it would be a good run.
    values: list[float | None] = [40.0, 41.0, math.nan, 900.0, 950.0]
    step = find_step(values, threshold=100.0)
    assert step is not None and (step.last_good, step.first_bad) == (1, 3)


def test_significance_is_the_medians_z_test() -> None:
    # Medians 0 and 2, four runs each, sigma 1: z = 2 / (sqrt(pi/2) * sqrt(1/4 + 1/4)).
    z = 2 / (math.sqrt(math.pi / 2) * math.sqrt(0.5))
    p = significance([0.0, -1, 1, 0], [2.0, 1, 3, 2], 1.0)
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert p == pytest.approx(0.0240, abs=1e-4)


def test_noise_scale_ignores_a_step_and_an_outlier() -> None:
    flat = [0.0, 0.1] * 10
    assert noise_scale(flat) == pytest.approx(0.1 / (0.6745 * math.sqrt(2)))
    stepped = flat[:10] + [y + 2 for y in flat[10:]]
    stepped[4] += 5
    assert noise_scale(stepped) == pytest.approx(noise_scale(flat))


def test_supported_needs_two_runs_beyond_the_midpoint() -> None:
    before = [0.0, 0.1, 0.0, 0.1]
    assert supported(before, [1.0, 1.1], 2)
    assert not supported(before, [3.0, 0.1], 2)  # one outlier and an ordinary run
