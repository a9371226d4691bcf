"""The ETA from measurements (issue 29.2): this run's measured phase times replace the
cost model's guesses, phase by phase, as they come in (bisector.cost.MeasuredPhases)."""

from __future__ import annotations

import pytest

from bisector.cost import MeasuredPhases, Phases

GUESS = Phases(build_s=100, launch_s=10, warmup_s=300, collect_s=5, teardown_s=5)


def test_the_models_guesses_until_a_phase_is_measured() -> None:
    times = MeasuredPhases(GUESS)
    assert times.evaluation_s(search=True) == 420
    assert times.eta_s(3, 2) == 5 * 420


def test_measured_phases_replace_the_guesses_one_by_one() -> None:
    times = MeasuredPhases(GUESS)
    times.add({"launch": 20.0}, search=False)  # an endpoint whose collect failed, say
    assert times.evaluation_s(search=False) == 100 + 20 + 300 + 5 + 5
    times.add({"launch": 40.0, "collect": 1.0, "teardown": 3.0}, search=False)
    assert times.expected("launch") == 30.0  # the mean of this run's
    assert times.evaluation_s(search=False) == 100 + 30 + 300 + 1 + 3


def test_early_verdicts_count_search_warmups_apart_from_full_ones() -> None:
    times = MeasuredPhases(GUESS)
    full = {"build": 200.0, "launch": 20.0, "warmup": 290.0, "collect": 1.0, "teardown": 2.0}
    times.add(full, search=False)  # an endpoint: a full-length warmup
    assert times.expected("warmup", search=True) == 290.0  # stands in until a search run
    times.add({**full, "build": 30.0, "warmup": 30.0}, search=True)  # ended early
    times.add({**full, "build": 30.0, "warmup": 90.0}, search=True)
    assert times.expected("warmup", search=True) == 60.0
    assert times.expected("warmup", search=False) == 290.0
    search = 30 + 20 + 60 + 1 + 2
    full_run = 30 + 20 + 290 + 1 + 2
    assert times.eta_s(4, 2) == pytest.approx(4 * search + 2 * full_run)


def test_the_first_build_is_clean_and_later_incremental_ones_replace_it() -> None:
    times = MeasuredPhases(GUESS)
    times.add({"build": 216.0}, search=False)  # cold caches
    assert times.expected("build") == 216.0
    times.add({"build": 30.0}, search=False)
    times.add({"build": 20.0}, search=True)
    assert times.expected("build") == 25.0  # not pulled up by the clean one


def test_without_a_model_no_eta_until_every_phase_is_measured() -> None:
    times = MeasuredPhases(None)
    assert times.eta_s(3, 2) is None
    times.add({"build": 12.0}, search=False)  # a skip at the build: only it was measured
    assert times.eta_s(3, 2) is None
    times.add(
        {"build": 10.0, "launch": 2.0, "warmup": 5.0, "collect": 1.0, "teardown": 1.0},
        search=False,
    )
    assert times.eta_s(3, 2) == 5 * (10 + 2 + 5 + 1 + 1)
    assert times.eta_s(0, 0) == 0.0
