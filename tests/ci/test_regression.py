from __future__ import annotations

import pytest

from bisector.ci.metadata import RunInfo
from bisector.ci.regression import (
    analyse,
    bisect_argv,
    command_text,
    find_regression,
    metric_higher_is_worse,
)
from bisector.ci.scoring import RunScore
from bisector.logs import Scores
from bisector.metric_registry import MetricRegistry


def _run(n: int, conflicts: int | None, commit: str | None = None, logs: bool = True) -> RunScore:
    info = RunInfo(n, commit if commit is not None else f"c{n:03d}", "SUCCESS", None, None)
    if not logs:
        return RunScore(info, None, None, problem="no logs")
    return RunScore(info, None, Scores({"conflicts": conflicts, "lines": 10}))


def test_runs_without_values_are_neither_good_nor_bad() -> None:
    runs = [
        _run(1, 40),
        _run(2, 45),
        _run(3, None, logs=False),
        _run(4, 50),
        _run(5, None),  # --v=2: no request lines
        _run(6, None, logs=False),
        _run(7, 900),
        _run(8, 700),
    ]
    found = find_regression(runs, "conflicts")
    assert found is not None
    assert (found.good.run, found.bad.run) == (4, 7)
    assert found.step.threshold_source == "change point"
    assert found.as_json() == {"good": "c004", "bad": "c007", "good_run": 4, "bad_run": 7}
    assert bisect_argv(found) == [
        "bisector",
        "run",
        "--good",
        "c004",
        "--bad",
        "c007",
        "--metric",
        "conflicts",
    ]


def test_a_lone_noisy_run_is_not_a_regression() -> None:
    runs = [_run(1, 40), _run(2, 800), _run(3, 45), _run(4, 41), _run(5, 900)]
    assert find_regression(runs, "conflicts") is None
    assert find_regression(runs, "conflicts", threshold=100) is None


def test_given_threshold() -> None:
    runs = [_run(1, 40), _run(2, 60), _run(3, 90), _run(4, 95)]
    found = find_regression(runs, "conflicts", threshold=80)
    assert found is not None
    assert (found.good.run, found.bad.run, found.step.threshold_source) == (2, 3, "given")


def test_unbisectable_ranges_say_why() -> None:
    same = [_run(1, 40, "aaa"), _run(2, 41, "aaa"), _run(3, 900, "aaa"), _run(4, 950, "aaa")]
    found = find_regression(same, "conflicts")
    assert found is not None
    assert "same commit" in (found.why_not_bisectable() or "")
    # Without a threshold a level needs two runs on each side of its change point.
    unknown = [_run(1, 41), _run(2, 40, ""), _run(3, 900), _run(4, 950)]
    found = find_regression(unknown, "conflicts")
    assert found is not None
    assert "run 2" in (found.why_not_bisectable() or "")
    with pytest.raises(ValueError, match="without commits"):
        bisect_argv(found)


def test_command_text_quotes() -> None:
    assert command_text(["bisector", "run", "--config", "my dir/c.toml"]) == (
        "bisector run --config 'my dir/c.toml'"
    )


def _series(values: list[float | None], first: int = 1) -> list[RunScore]:
    return [_run(first + k, None if v is None else int(v)) for k, v in enumerate(values)]


def test_analyse_lists_every_change_point_and_hunts_the_newest_regression() -> None:
    # ~40, then ~200 from run 9, then ~800 from run 17 (a run without data at 12).
    values: list[float | None] = [40, 42, 39, 41, 43, 40, 38, 41, 200, 210, 190, None]
    values += [205, 198, 202, 195, 800, 820, 790, 810, 805]
    analysis = analyse(_series(values), "conflicts")
    assert [(c.before.run, c.at.run, c.after.run) for c in analysis.changes] == [
        (8, 9, 9),
        (16, 17, 17),
    ]
    assert [c.point.direction for c in analysis.changes] == ["regression"] * 2
    assert [analysis.hunted(c) for c in analysis.changes] == [False, True]
    found = analysis.found
    assert found is not None and (found.good.run, found.bad.run) == (16, 17)
    assert found.step.p_value == analysis.changes[1].point.p_value
    assert analysis.changes[0].as_json(False) == {
        "run": 9,
        "last_before_run": 8,
        "first_after_run": 9,
        "last_before_commit": "c008",
        "first_after_commit": "c009",
        "before": 40.5,
        "after": 200.0,
        "change": pytest.approx(200 / 40.5 - 1),
        "p_value": analysis.changes[0].point.p_value,
        "direction": "regression",
        "hunted": False,
    }
    # A given threshold makes the range; the change points are listed, none hunted.
    given = analyse(_series(values), "conflicts", threshold=500)
    assert given.found is not None and given.found.step.threshold_source == "given"
    assert [given.hunted(c) for c in given.changes] == [False, False]


def test_an_improvement_is_listed_but_not_hunted() -> None:
    values: list[float | None] = [400, 410, 390, 405, 395, 400, 80, 82, 79, 81, 80]
    analysis = analyse(_series(values), "conflicts")
    assert [c.point.direction for c in analysis.changes] == ["improvement"]
    assert analysis.found is None
    # Where lower is worse, the same drop is the regression to hunt.
    flipped = analyse(_series(values), "conflicts", higher_is_worse=False)
    assert flipped.found is not None and (flipped.found.good.run, flipped.found.bad.run) == (6, 7)


def test_every_metric_today_is_worse_when_higher() -> None:
    metrics = MetricRegistry()
    assert metric_higher_is_worse(metrics, "conflicts")
    assert metric_higher_is_worse(metrics, "dispatch_lag_s")
