from __future__ import annotations

import pytest

from bisector.ci.metadata import commit_from_version, parse_run

FULL = "7043372d05510b13a0928af92deda6110740dd5e"


def test_commit_from_version_strings() -> None:
    assert commit_from_version("v1.7.0-alpha.4.123+7043372d05510b") == "7043372d05510b"
    assert commit_from_version("v1.7.0-beta.0.23+7043372d05510b-dirty") == "7043372d05510b"
    assert commit_from_version("v1.7.0") is None


def test_bootstrap_era_prefers_full_repo_commit() -> None:
    started = {"timestamp": 1496400000, "version": "v1.7.0-alpha.4.123+7043372d05510b"}
    finished = {
        "timestamp": 1496403600,
        "result": "FAILURE",
        "passed": False,
        "job-version": "v1.7.0-alpha.4.123+7043372d05510b",
        "metadata": {"repo-commit": FULL, "job-version": "v1.7.0-alpha.4.123+7043372d05510b"},
    }
    info = parse_run(442, started, finished)
    assert info.commit == FULL
    assert info.result == "FAILURE"
    assert (info.started, info.finished) == (1496400000.0, 1496403600.0)


def test_bootstrap_era_version_only() -> None:
    info = parse_run(427, {"repo-version": "v1.7.0-alpha.3.9+1444d252e17ab7"}, {"passed": True})
    assert info.commit == "1444d252e17ab7"
    assert info.result == "SUCCESS"


def test_pod_utils_era_revision_and_running_job() -> None:
    started = {"timestamp": 1700000000, "repos": {"k8s.io/kubernetes": "master"}}
    finished = {"timestamp": 1700003600, "passed": True, "result": "SUCCESS", "revision": FULL}
    assert parse_run(1, started, finished).commit == FULL
    running = parse_run(2, {"timestamp": 1, "repos": {"k8s.io/kubernetes": f"master:{FULL}"}}, None)
    assert running.commit == FULL
    assert running.result is None
    assert running.finished is None


def test_no_commit_anywhere() -> None:
    assert parse_run(3, {"timestamp": 5}, {"result": "ABORTED"}).commit is None


NOW = 1_800_000_000.0  # 2027-01-15: the clock the plausibility checks use here
MAY_2017 = 1_495_259_460


@pytest.mark.parametrize(
    ("value", "expected", "problem"),
    [
        (MAY_2017, float(MAY_2017), None),
        (MAY_2017 + 0.5, MAY_2017 + 0.5, None),
        (MAY_2017 * 1000, float(MAY_2017), None),  # milliseconds
        (float("nan"), None, "timestamp nan is not a number"),
        (float("inf"), None, "timestamp inf is not a number"),
        ("NaN", None, "timestamp 'NaN' is not a number"),  # json's NaN, kept a string
        ("1495259460", None, "timestamp '1495259460' is not a number"),
        (-1, None, "timestamp -1 is not a plausible date"),
        (0, None, "timestamp 0 is not a plausible date"),
        (10**400, None, "is not a plausible date"),
        (NOW + 30 * 86400, None, "is not a plausible date"),  # a month in the future
        (True, None, "timestamp True is not a number"),
        ([MAY_2017], None, "is not a number"),
        ({"seconds": MAY_2017}, None, "is not a number"),
        (None, None, None),
    ],
)
def test_timestamps_are_checked(value: object, expected: float | None, problem: str | None) -> None:
    info = parse_run(1, {"timestamp": value}, None, now=NOW)
    assert info.started == expected
    if problem is None:
        assert info.problems == ()
    else:
        assert len(info.problems) == 1
        assert info.problems[0].startswith("started.json: ")
        assert problem in info.problems[0]


@pytest.mark.parametrize(
    "bad",
    [None, 1, 1.5, True, "x", [], [1, 2], {"a": {"b": []}}, "7043372d05510b" * 100, "\0" * 5],
)
def test_any_field_of_any_type_never_raises(bad: object) -> None:
    for key in (
        "timestamp",
        "result",
        "passed",
        "revision",
        "repos",
        "metadata",
        "version",
        "repo-version",
        "job-version",
    ):
        doc = {key: bad, "metadata": {key: bad}}
        info = parse_run(1, doc, doc, now=NOW)
        assert info.result is None or info.result in {"SUCCESS", "FAILURE", "X"}
        assert info.commit is None or isinstance(info.commit, str)
    assert parse_run(1, bad, bad).commit is None  # type: ignore[arg-type]


def test_a_result_that_is_not_a_word_is_reported() -> None:
    info = parse_run(1, None, {"result": "<script>" * 20, "timestamp": MAY_2017}, now=NOW)
    assert info.result is None
    assert info.problems[0].startswith("finished.json: result '<script>")
    assert parse_run(1, None, {"result": " success "}).result == "SUCCESS"
