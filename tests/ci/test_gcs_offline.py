"""With no network, GCS and HTTP sources end in one line, soon (issue 12 item 8).

No network is simulated on loopback (tests/helpers/gcs.py): a closed port
(refused) and a listener that never accepts (connect timeout). Before the fix,
`history --runs 427..430` took 8 min 39 s offline; scripts/offline_gcs.py
measures the figure. The ceilings below are generous guards, not targets.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from bisector.ci import gcs
from bisector.ci.runs import JobRef, list_runs
from bisector.errors import BisectorError
from bisector.exitcodes import HistoryExit, ScoreExit
from bisector.logs import sources
from bisector.upload import upload_run
from tests.helpers.gcs import blackhole_endpoint, refused_endpoint

ROOT = Path(__file__).resolve().parents[2]
CEILING_S = 60.0


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with refused_endpoint() as host:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
        yield host


def _cli(host: str, tmp_path: Path, *args: str) -> tuple[int, list[str], float]:
    env = {**os.environ, "STORAGE_EMULATOR_HOST": host, "BISECTOR_CACHE_DIR": str(tmp_path)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bisector", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CEILING_S * 3,
        check=False,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines, time.monotonic() - start


HISTORY = ["history", "--job", "ci-kubernetes-kubemark-500-gce", "--runs", "427..430"]
SCORE = ["score", "gs://kubernetes-jenkins/logs/j/427/artifacts/m/kube-apiserver.log"]


@pytest.mark.parametrize(
    ("args", "exit_code"),
    # score: no verdict (git bisect run skips), never 1-127 "bad"
    [(HISTORY, HistoryExit.USAGE), (SCORE, ScoreExit.NO_VERDICT)],
    ids=["history", "score"],
)
def test_cli_offline_says_one_line(tmp_path: Path, args: list[str], exit_code: int) -> None:
    with refused_endpoint() as host:
        code, lines, seconds = _cli(host, tmp_path, *args)
    assert code == exit_code
    prefix = "no verdict" if args is SCORE else "error"
    assert lines == [
        f"bisector: {prefix}: cannot reach {host} (connection refused); check the network "
        "connection (or STORAGE_EMULATOR_HOST) and try again"
    ]
    assert seconds < CEILING_S


@pytest.mark.slow
def test_history_behind_a_dropping_firewall_times_out_in_one_line(tmp_path: Path) -> None:
    with blackhole_endpoint() as host:
        code, lines, seconds = _cli(host, tmp_path, *HISTORY)
    assert code == 2
    assert len(lines) == 1
    assert "(connection timed out)" in lines[0]
    assert seconds < CEILING_S


def test_unreachable_is_tried_twice_then_not_retried_by_an_outer_loop(offline: str) -> None:
    calls: list[int] = []
    client = gcs.client()

    def listing() -> Any:
        calls.append(1)
        return list(client.list_blobs("b", timeout=gcs.TIMEOUT, retry=None))

    with pytest.raises(gcs.Unreachable):
        gcs.retrying(lambda: gcs.retrying(listing))
    assert len(calls) == gcs.UNREACHABLE_ATTEMPTS


def test_library_retries_are_off_so_one_try_is_one_request(
    offline: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The storage library alone retries a refused connection for 120 s by default.
    monkeypatch.setattr(gcs, "UNREACHABLE_ATTEMPTS", 1)
    start = time.monotonic()
    with pytest.raises(gcs.Unreachable, match="connection refused"):
        list_runs(gcs.client(), JobRef("b", "j"))
    with pytest.raises(BisectorError, match="cannot reach"):
        sources.resolve("gs://b/o")
    assert time.monotonic() - start < CEILING_S


def test_upload_offline_is_one_line(offline: str, tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# report\n")
    with pytest.raises(gcs.Unreachable):
        upload_run(tmp_path, "gs://b/p")


def test_a_transient_error_mid_connection_is_still_retried_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gcs, "BACKOFF_S", 0.0)
    calls: list[int] = []

    def reset() -> None:
        calls.append(1)
        raise requests.ConnectionError("Connection aborted: reset by peer")

    with pytest.raises(requests.ConnectionError):
        gcs.retrying(reset)
    assert len(calls) == gcs.ATTEMPTS


def test_https_source_offline_is_one_line() -> None:
    with refused_endpoint() as host:
        url = host.replace("http://", "https://") + "/kube-apiserver.log"
        source = sources.resolve(url)
        with pytest.raises(BisectorError, match="cannot fetch log"), sources.open_source(source):
            pass
