from __future__ import annotations

import pytest

from bisector.ci.metadata import RunInfo
from bisector.ci.regression import bisect_argv, command_text, find_regression
from bisector.ci.scoring import RunScore
from bisector.logs import Scores


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
