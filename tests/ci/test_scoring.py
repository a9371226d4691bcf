"""Scoring CI runs from a real GCS emulator: exact counts, no-data runs, cache, retries."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from bisector.ci import gcs, scoring
from bisector.ci.cache import ScoreCache
from bisector.ci.runs import JobRef
from bisector.ci.scoring import ScoreSettings, score_run, score_runs
from bisector.errors import BisectorError
from bisector.logs import score_logs
from tests.helpers.ci_history import MASTER, CiRun, commit_of, write_job_history
from tests.helpers.gcs import upload_gzip_encoded

BUCKET = "ci-runs-scoring"
JOB = "ci-kubernetes-kubemark-gce"
RUNS = [
    CiRun(1, commit_of(1), conflicts=37, files=3),
    CiRun(2, commit_of(2), conflicts=41, files=1, era="podutils"),
    CiRun(3, commit_of(3), conflicts=400, verbosity=2),
    CiRun(4, commit_of(4), logs=False),
    CiRun(5, commit_of(5), conflicts=12, files=2),
    CiRun(6, commit_of(6), conflicts=7, files=1),
]


@pytest.fixture(scope="module")
def job(gcs_client: Any) -> JobRef:
    write_job_history(gcs_client, BUCKET, JOB, RUNS)
    return JobRef(BUCKET, JOB)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcs, "BACKOFF_S", 0.0)


def test_rotated_gzip_encoded_set_is_counted_exactly(gcs_client: Any, job: JobRef) -> None:
    result = score_run(gcs_client, job, 1, ScoreCache(None), ScoreSettings())
    assert result.problem is None
    assert result.logs is not None
    assert len(result.logs.objects) == 3
    assert result.value("conflicts") == 37
    assert result.value("node_writes") == 60
    assert result.status("conflicts") == "ok"
    assert result.info.commit == commit_of(1)


def test_v2_log_has_no_data_and_a_run_without_logs_has_no_value(
    gcs_client: Any, job: JobRef
) -> None:
    v2 = score_run(gcs_client, job, 3, ScoreCache(None), ScoreSettings())
    assert v2.scores is not None
    assert v2.value("conflicts") is None
    assert v2.status("conflicts") == "no data"
    assert v2.value("cacher_hwm") == 100  # cacher lines are logged at --v=2 too
    missing = score_run(gcs_client, job, 4, ScoreCache(None), ScoreSettings())
    assert (missing.scores, missing.value("conflicts")) == (None, None)
    assert missing.status("conflicts") == "no logs"
    assert missing.info.result == "SUCCESS"


def test_runs_scored_on_threads_come_back_in_run_order(gcs_client: Any, job: JobRef) -> None:
    seen: list[int] = []
    scored = score_runs(
        gcs_client,
        job,
        [6, 1, 2, 3, 4],
        ScoreCache(None),
        workers=3,
        on_done=lambda s: seen.append(s.run),
    )
    assert [s.run for s in scored] == [6, 1, 2, 3, 4]
    assert [s.value("conflicts") for s in scored] == [7, 37, 41, None, None]
    assert sorted(seen) == [1, 2, 3, 4, 6]


def test_cache_hit_then_rescored_when_the_object_is_rewritten(
    gcs_client: Any, job: JobRef, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ScoreCache(tmp_path / "cache")
    first = score_run(gcs_client, job, 5, cache, ScoreSettings())
    assert (first.value("conflicts"), first.cached) == (12, False)
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1

    def must_not_score(*args: object, **kwargs: object) -> None:
        raise AssertionError("scored although cached")

    monkeypatch.setattr(scoring, "score_logs", must_not_score)
    again = score_run(gcs_client, job, 5, cache, ScoreSettings())
    assert (again.value("conflicts"), again.cached) == (12, True)
    assert again.scores == first.scores

    # Re-upload the live file with more conflicts: new generation, scored again.
    monkeypatch.setattr(scoring, "score_logs", score_logs)
    live = f"logs/{JOB}/5/artifacts/{MASTER}/kube-apiserver.log"
    old = gzip.decompress(gcs_client.bucket(BUCKET).blob(live).download_as_bytes(raw_download=True))
    # Stamped as the log's last line: a line earlier than the log's first is another
    # launch's (times running backwards are no measurement).
    stamp = old.rstrip(b"\n").rsplit(b"\n", 1)[-1][:21]
    extra = (
        stamp + b"       7 wrap.go:42] PATCH /api/v1/nodes/n9/status: (1ms) 409 "
        b"[[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
    )
    upload_gzip_encoded(gcs_client, BUCKET, live, old + extra)
    rescored = score_run(gcs_client, job, 5, cache, ScoreSettings())
    assert (rescored.problem, rescored.value("conflicts"), rescored.cached) == (None, 13, False)


def test_transient_errors_are_retried(
    gcs_client: Any, job: JobRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = [gexc.ServiceUnavailable("503"), gexc.TooManyRequests("429")]  # type: ignore[no-untyped-call]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures:
            exc = failures.pop(0)
            # As the log scorer reports it: a BisectorError raised `from None` while handling.
            try:
                raise exc
            except gexc.GoogleAPIError:
                raise BisectorError("cannot read gs://...: 503") from None
        return score_logs(*args, **kwargs)

    monkeypatch.setattr(scoring, "score_logs", flaky)
    result = score_run(gcs_client, job, 6, ScoreCache(None), ScoreSettings())
    assert (result.value("conflicts"), result.problem) == (7, None)
    assert failures == []


def test_persistent_errors_make_the_run_unreadable_not_good(
    gcs_client: Any, job: JobRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def down(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise gexc.ServiceUnavailable("backend down")  # type: ignore[no-untyped-call]

    monkeypatch.setattr(scoring, "score_logs", down)
    result = score_run(gcs_client, job, 6, ScoreCache(None), ScoreSettings())
    assert len(calls) == gcs.ATTEMPTS
    assert result.scores is None
    assert result.value("conflicts") is None
    assert result.status("conflicts").startswith("unreadable: ")

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise gexc.Forbidden("no access")  # type: ignore[no-untyped-call]

    calls.clear()
    monkeypatch.setattr(scoring, "score_logs", forbidden)
    result = score_run(gcs_client, job, 6, ScoreCache(None), ScoreSettings())
    assert len(calls) == 1  # not transient: no retry
    assert result.status("conflicts").startswith("unreadable: ")


def test_corrupt_gzip_log_is_unreadable(gcs_client: Any) -> None:
    write_job_history(gcs_client, BUCKET, "ci-corrupt", [CiRun(1, commit_of(1), logs=False)])
    name = f"logs/ci-corrupt/1/artifacts/{MASTER}/kube-apiserver.log.2.gz"
    gcs_client.bucket(BUCKET).blob(name).upload_from_string(b"\x1f\x8b\x08\x00garbage" * 20)
    result = score_run(
        gcs_client, JobRef(BUCKET, "ci-corrupt"), 1, ScoreCache(None), ScoreSettings()
    )
    assert result.scores is None
    assert result.value("conflicts") is None
    assert result.status("conflicts").startswith("unreadable: ")
