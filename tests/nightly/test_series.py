"""The nightly's regressions: every change point of the window, newest regression first."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bisector.ci.changepoint import Step
from bisector.nightly.config import Budget, JobConfig, NightlyConfig
from bisector.nightly.series import Regression, find_regressions
from bisector.nightly.store import NightlyStore, StoredRun

JOB = JobConfig("j", "ci-j", "b", "conflicts", None, None, Budget(), 2, None, None, "here")


def _config(tmp_path: Path, window: int = 40) -> NightlyConfig:
    return NightlyConfig(
        tmp_path / "n.toml", tmp_path, tmp_path / "n.db", tmp_path, None, window, ()
    )


def _store(tmp_path: Path, values: list[float | None], first: int = 100) -> NightlyStore:
    store = NightlyStore(tmp_path / "n.db")
    for k, value in enumerate(values):
        status = "ok" if value is not None else "no logs"
        store.put_run(
            "j", "conflicts", StoredRun(first + k, f"c{first + k}", "SUCCESS", None, value, status)
        )
    return store


TWO_STEPS: list[float | None] = [45, 52, 48, 50, 47, 44, 51, 49, 200, 210, None, 190, 205, 198]
TWO_STEPS += [800, 820, 790, 810]


def test_regressions_come_newest_first_with_every_change_point(tmp_path: Path) -> None:
    store = _store(tmp_path, TWO_STEPS)
    regressions = find_regressions(_config(tmp_path), JOB, store)
    assert [(r.good.run, r.bad.run) for r in regressions] == [(113, 114), (107, 108)]
    assert all(r.step.threshold_source == "change point" for r in regressions)
    assert all(r.step.p_value is not None and r.step.p_value < 1e-3 for r in regressions)
    assert [len(r.points) for r in regressions] == [2, 2]
    assert [regressions[0].runs[p.first_after].run for p in regressions[0].points] == [108, 114]
    store.close()


def test_a_threshold_gives_one_regression_the_newest_split(tmp_path: Path) -> None:
    store = _store(tmp_path, TWO_STEPS)
    regressions = find_regressions(_config(tmp_path), replace(JOB, threshold=100.0), store)
    assert [(r.good.run, r.bad.run, r.step.threshold_source) for r in regressions] == [
        (107, 108, "given")
    ]
    assert len(regressions[0].points) == 2  # listed in the report all the same
    store.close()


def test_the_window_bounds_what_is_looked_at(tmp_path: Path) -> None:
    store = _store(tmp_path, TWO_STEPS)
    regressions = find_regressions(_config(tmp_path, window=8), JOB, store)
    assert [(r.good.run, r.bad.run) for r in regressions] == [(113, 114)]
    store.close()


def test_a_regression_round_trips_through_the_hunts_table(tmp_path: Path) -> None:
    store = _store(tmp_path, TWO_STEPS)
    [newest, older] = find_regressions(_config(tmp_path), JOB, store)
    assert Regression.from_json(newest.to_json()) == newest
    assert Regression.from_json(older.to_json()) == older
    store.close()


def test_a_hunt_stored_before_change_points_had_p_values_still_resumes() -> None:
    # Regression.to_json of 82c7c37: a step without p_value, no points, no direction.
    runs = [StoredRun(r, f"c{r}", "SUCCESS", None, v, "ok") for r, v in ((1, 40.0), (2, 500.0))]
    stored = {
        "step": {
            "last_good": 0,
            "first_bad": 1,
            "threshold": 141.4,
            "threshold_source": "change point",
            "before": 40.0,
            "after": 500.0,
        },
        "runs": [vars(r) for r in runs],
        "good": 1,
        "bad": 2,
    }
    regression = Regression.from_json(json.dumps(stored))
    assert regression.step == Step(0, 1, 141.4, "change point", 40.0, 500.0, None)
    assert (regression.good.run, regression.bad.run) == (1, 2)
    assert (regression.points, regression.higher_is_worse) == ((), True)


@pytest.mark.parametrize(
    "values", [[45.0, 52, 48, 50, 47, 44, 51, 49], [45.0, 52, 48, 480, 50, 47]]
)
def test_no_regression_without_a_step(tmp_path: Path, values: list[float | None]) -> None:
    store = _store(tmp_path, values)
    assert find_regressions(_config(tmp_path), JOB, store) == []
    store.close()
