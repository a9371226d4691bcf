"""Listing runs, reading their metadata and finding the master log set, in a real emulator."""

from __future__ import annotations

from typing import Any

import pytest

from bisector.ci.runs import (
    JobRef,
    find_log_set,
    latest_build,
    list_runs,
    parse_span,
    read_run_info,
    select_runs,
)
from bisector.errors import BisectorError
from tests.helpers.ci_history import (
    BASE_MASTER,
    MASTER,
    CiRun,
    commit_of,
    write_job_history,
)

BUCKET = "ci-runs-listing"
JOB = "ci-kubernetes-kubemark-gce-scale"


@pytest.fixture(scope="module")
def job(gcs_client: Any) -> JobRef:
    runs = [
        CiRun(9, commit_of(9), conflicts=3, files=1),
        CiRun(10, commit_of(10), conflicts=4, files=3, era="podutils"),
        CiRun(11, commit_of(11), logs=False, full_commit=False),
        CiRun(12, commit_of(12), conflicts=5, result=None, base_master=False),
        CiRun(
            100,
            commit_of(100),
            conflicts=2,
            master="e2e-big-master",
            base_master=False,
            extra={"artifacts/kubemark-500-kubemark-master/kube-apiserver-audit.log": b"x\n"},
        ),
    ]
    write_job_history(gcs_client, BUCKET, JOB, runs, latest_build=11)
    # Not runs: a job-level file and a non-numeric prefix.
    gcs_client.bucket(BUCKET).blob(f"logs/{JOB}/jobResultsCache.json").upload_from_string("{}")
    gcs_client.bucket(BUCKET).blob(f"logs/{JOB}/tmp/x").upload_from_string("x")
    return JobRef(BUCKET, JOB)


def test_runs_are_the_numeric_prefixes_in_numeric_order(gcs_client: Any, job: JobRef) -> None:
    assert list_runs(gcs_client, job) == [9, 10, 11, 12, 100]
    assert latest_build(gcs_client, job) == 11


def test_missing_job_and_bucket_are_clear_errors(gcs_client: Any, job: JobRef) -> None:
    with pytest.raises(BisectorError, match=r"no runs of job 'ci-nope'.*check --job"):
        list_runs(gcs_client, JobRef(BUCKET, "ci-nope"))
    with pytest.raises(BisectorError, match=r"gs://no-such-bucket does not exist"):
        list_runs(gcs_client, JobRef("no-such-bucket", JOB))
    assert latest_build(gcs_client, JobRef(BUCKET, "ci-nope")) is None


def test_select_runs_by_span_and_last() -> None:
    runs = [9, 10, 11, 12, 100]
    assert select_runs(runs) == runs
    assert select_runs(runs, span=parse_span("10..12")) == [10, 11, 12]
    assert select_runs(runs, span=parse_span("12")) == [12]
    assert select_runs(runs, last=2) == [12, 100]
    assert select_runs(runs, span=(9, 12), last=2) == [11, 12]
    with pytest.raises(BisectorError, match=r"no run in 13\.\.99; this job has runs 9\.\.100"):
        select_runs(runs, span=(13, 99))


@pytest.mark.parametrize("text", ["a..b", "5..", "12..10", ""])
def test_bad_span_is_a_clear_error(text: str) -> None:
    with pytest.raises(BisectorError, match="--runs"):
        parse_span(text)


def test_metadata_of_both_eras(gcs_client: Any, job: JobRef) -> None:
    boot = read_run_info(gcs_client, job, 9)
    assert (boot.commit, boot.result) == (commit_of(9), "SUCCESS")
    assert boot.started is not None and boot.finished is not None
    pod = read_run_info(gcs_client, job, 10)
    assert (pod.commit, pod.result) == (commit_of(10), "SUCCESS")
    # Only the version string names the commit: its 14 hex digits.
    assert read_run_info(gcs_client, job, 11).commit == commit_of(11)[:14]
    running = read_run_info(gcs_client, job, 12)
    # A running bootstrap run: only started.json, whose version string names the commit.
    assert (running.commit, running.result, running.finished) == (commit_of(12)[:14], None, None)


def test_kubemark_master_wins_over_the_base_master(gcs_client: Any, job: JobRef) -> None:
    logs = find_log_set(gcs_client, job, 10)
    assert logs is not None
    assert logs.master == MASTER
    names = sorted(o.name.rsplit("/", 1)[-1] for o in logs.objects)
    # The rotated set, never the audit log or other components' logs.
    assert names == ["kube-apiserver.log", "kube-apiserver.log.1", "kube-apiserver.log.2.gz"]
    assert all(o.generation > 0 and o.size > 0 for o in logs.objects)
    explicit = find_log_set(gcs_client, job, 10, master=BASE_MASTER)
    assert explicit is not None
    assert explicit.master == BASE_MASTER
    assert find_log_set(gcs_client, job, 10, master="nope-master") is None


def test_plain_master_and_a_run_without_logs(gcs_client: Any, job: JobRef) -> None:
    # A kubemark-master directory holding only an audit log is not a log set.
    logs = find_log_set(gcs_client, job, 100)
    assert logs is not None
    assert logs.master == "e2e-big-master"
    assert find_log_set(gcs_client, job, 11) is None
    assert find_log_set(gcs_client, job, 12) is not None
