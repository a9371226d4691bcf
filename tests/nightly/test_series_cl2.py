"""The nightly's series of a cl2 metric, read from the builds' CL2 summaries in artifacts/
(tests/helpers/cl2_history.py, against the GCS emulator): only what a build *is* is stored.

A build without a summary is stored with no value ("no summary"), once; a summary that
cannot be read tonight, and a build still running, are left for a later night. Two cl2
metrics read from one summary file share the score cache and keep their own values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bisector.nightly.config import NightlyConfig, load_nightly_config
from bisector.nightly.series import update_series
from bisector.nightly.store import NightlyStore
from tests.helpers.cl2_history import CL2_JOB, Cl2Build, planted_commit, write_cl2_job

RUNNING, NO_SUMMARY, GARBLED = 5, 2, 3


def _builds() -> list[Cl2Build]:
    return [
        Cl2Build(i, planted_commit(i), patch_node_status_p99_ms=40.0 + i, summaries=i != NO_SUMMARY)
        for i in range(6)
    ]


def _config(tmp_path: Path, bucket: str) -> NightlyConfig:
    config = tmp_path / "nightly.toml"
    config.write_text(
        f'[nightly]\nstate = "{tmp_path / "state"}"\n'
        f'[[nightly.jobs]]\nname = "patch"\njob = "{CL2_JOB}"\nbucket = "{bucket}"\n'
        'metric = "apiserver_patch_node_status_p99_ms"\n'
        f'[[nightly.jobs]]\nname = "list"\njob = "{CL2_JOB}"\nbucket = "{bucket}"\n'
        'metric = "list_pods_p99_ms"\n[nightly.jobs.metrics.list_pods_p99_ms]\nsource = "cl2"\n'
        'summary = "APIResponsivenessPrometheus_load_"\nkey = "Perc99"\n'
        'labels = { Verb = "LIST", Resource = "pods", Scope = "cluster" }\n'
    )
    (tmp_path / "state").mkdir()
    return load_nightly_config(config)


def _summary(client: Any, bucket: str, build: Cl2Build) -> Any:
    prefix = f"logs/{CL2_JOB}/{build.build}/artifacts/APIResponsivenessPrometheus_load_"
    (blob,) = client.list_blobs(bucket, prefix=prefix)
    return client.bucket(bucket).blob(blob.name)


@pytest.mark.slow
def test_a_cl2_series_stores_what_builds_are_and_reads_the_rest_again(
    gcs_client: Any, tmp_path: Path
) -> None:
    bucket = "series-cl2"
    builds = _builds()
    write_cl2_job(gcs_client, bucket, CL2_JOB, builds)
    store_bucket = gcs_client.bucket(bucket)
    store_bucket.blob(f"logs/{CL2_JOB}/{builds[RUNNING].build}/finished.json").delete()
    summary = _summary(gcs_client, bucket, builds[GARBLED])
    whole = summary.download_as_bytes()
    summary.upload_from_string(whole[: len(whole) // 2])  # cut short: not JSON
    cfg = _config(tmp_path, bucket)
    patch, listing = cfg.jobs
    store = NightlyStore(cfg.database)
    said: list[str] = []
    try:
        assert update_series(cfg, patch, store, gcs_client, said.append) == 4
        series = {r.run: r for r in store.series("patch", patch.metric)}
        assert {b.index for b in builds if b.build in series} == {0, 1, NO_SUMMARY, 4}
        missing = series[builds[NO_SUMMARY].build]
        assert (missing.value, missing.status) == (None, "no summary")
        assert series[builds[4].build].value == 44.0
        assert any(f"run {builds[GARBLED].build}: unreadable" in line for line in said)
        assert any(f"run {builds[RUNNING].build} has not finished" in line for line in said)

        # The next night: the summary is whole again and the build finished; nothing
        # already stored is read again (the build without a summary among them).
        summary.upload_from_string(whole)
        write_cl2_job(gcs_client, bucket, CL2_JOB, [builds[RUNNING]])
        assert update_series(cfg, patch, store, gcs_client, said.append) == 2
        values = [r.value for r in store.series("patch", patch.metric)]
        assert values == [40.0, 41.0, None, 43.0, 44.0, 45.0]

        # Another cl2 metric of the same summary files, through the same score cache:
        # its own data item, never the cached reading of the first.
        assert update_series(cfg, listing, store, gcs_client, said.append) == 6
        values = [r.value for r in store.series("list", listing.metric)]
        assert values == [412.5, 412.5, None, 412.5, 412.5, 412.5]
    finally:
        store.close()
