"""The nightly's series of CI runs: a read failure is not an answer, it is read again.

A run is stored once and never scored again, so only what a run *is* may be stored
(its value, "no logs", "no data"): a log or metadata that could not be read tonight
(a GCS hiccup, an object being rewritten, a transport error the storage library does
not wrap) is left out and scored on a later night. Against the GCS emulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from bisector.ci import scoring
from bisector.ci.runs import read_run_info
from bisector.nightly.config import load_nightly_config
from bisector.nightly.series import update_series
from bisector.nightly.store import NightlyStore, StoredRun
from tests.helpers.ci_history import MASTER, CiRun, commit_of, write_job_history
from tests.helpers.nightly import nightly_config

JOB = "ci-kubernetes-kubemark-500-gce"
RUNS = range(100, 106)
BROKEN = 103
CORRUPT = f"logs/{JOB}/{BROKEN}/artifacts/{MASTER}/kube-apiserver.log.9.gz"


def _night(tmp_path: Path, bucket: str) -> tuple[Any, Any, NightlyStore, list[str]]:
    config = nightly_config(
        tmp_path / "nightly.toml", bucket=bucket, job=JOB, repo=None, state=tmp_path / "state"
    )
    cfg = load_nightly_config(config)
    (tmp_path / "state").mkdir(exist_ok=True)
    return cfg, cfg.jobs[0], NightlyStore(tmp_path / "state" / "nightly.db"), []


def _values(store: NightlyStore) -> dict[int, float | None]:
    return {r.run: r.value for r in store.series(JOB, "conflicts")}


@pytest.mark.slow
def test_a_run_whose_log_cannot_be_read_is_scored_on_a_later_night(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket = "series-unreadable"
    runs = [CiRun(n, commit_of(n), conflicts=40 + n % 7) for n in RUNS]
    garbled = {CORRUPT.split(f"/{BROKEN}/")[1]: b"\x1f\x8b" + b"x" * 64}  # not inflatable
    runs[BROKEN - RUNS[0]] = CiRun(BROKEN, commit_of(BROKEN), conflicts=44, extra=garbled)
    write_job_history(gcs_client, bucket, JOB, runs)
    cfg, job, store, said = _night(tmp_path, bucket)
    try:
        assert update_series(cfg, job, store, gcs_client, said.append) == len(RUNS) - 1
        assert BROKEN not in _values(store)
        assert any(f"run {BROKEN}: unreadable" in line and "later night" in line for line in said)
        gcs_client.bucket(bucket).blob(CORRUPT).delete()  # the object is whole again
        assert update_series(cfg, job, store, gcs_client, said.append) == 1
        assert _values(store)[BROKEN] == 44
    finally:
        store.close()


@pytest.mark.slow
def test_a_transport_error_for_one_run_leaves_it_for_a_later_night_not_the_others(
    gcs_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error the storage library does not wrap (requests' ConnectionError) while one
    run's metadata is read: before, it ended the whole night's scoring."""
    bucket = "series-transport"
    write_job_history(gcs_client, bucket, JOB, [CiRun(n, commit_of(n), conflicts=50) for n in RUNS])
    real = read_run_info

    def flaky(client: Any, job: Any, run: int) -> Any:
        if run == BROKEN:
            raise requests.exceptions.ConnectionError("Connection aborted: RemoteDisconnected")
        return real(client, job, run)

    cfg, job, store, said = _night(tmp_path, bucket)
    try:
        monkeypatch.setattr(scoring, "read_run_info", flaky)
        assert update_series(cfg, job, store, gcs_client, said.append) == len(RUNS) - 1
        assert BROKEN not in _values(store)
        monkeypatch.setattr(scoring, "read_run_info", real)
        assert update_series(cfg, job, store, gcs_client, said.append) == 1
        assert _values(store)[BROKEN] == 50
    finally:
        store.close()


@pytest.mark.slow
def test_a_read_failure_stored_by_an_earlier_version_is_scored_again(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket = "series-legacy"
    write_job_history(gcs_client, bucket, JOB, [CiRun(n, commit_of(n), conflicts=50) for n in RUNS])
    cfg, job, store, said = _night(tmp_path, bucket)
    try:
        lost = StoredRun(BROKEN, None, "SUCCESS", None, None, "unreadable: 503 Service Unavailable")
        store.put_run(JOB, "conflicts", lost)
        assert update_series(cfg, job, store, gcs_client, said.append) == len(RUNS)
        assert _values(store)[BROKEN] == 50
        assert {r.status for r in store.series(JOB, "conflicts")} == {"ok"}
    finally:
        store.close()
