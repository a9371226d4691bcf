from __future__ import annotations

import pytest

from bisector.ci.changepoint import find_step

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
