from __future__ import annotations

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
