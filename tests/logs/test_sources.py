"""Every way a log arrives: path, gzip by content, stdin, gs://, https://, rotated sets."""

from __future__ import annotations

import gzip
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bisector.errors import BisectorError
from bisector.logs import score_logs
from tests.helpers.gcs import ensure_bucket, upload_gzip_encoded
from tests.helpers.log_lines import MIX_CONFLICTS, MIX_WRITES, header, mix_log, request, text

LOG = text(mix_log("wrap42"))


def _check(scores: Any, factor: int = 1) -> None:
    assert scores.metrics["conflicts"] == factor * MIX_CONFLICTS
    assert scores.metrics["node_writes"] == factor * MIX_WRITES


def test_gzip_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"  # gzip without a .gz suffix, as gsutil cp -z stores
    path.write_bytes(gzip.compress(LOG))
    _check(score_logs([path]))
    plain_named_gz = tmp_path / "plain.gz"
    plain_named_gz.write_bytes(LOG)
    _check(score_logs([plain_named_gz]))


def test_multi_member_gzip(tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log.gz"
    path.write_bytes(gzip.compress(LOG) + gzip.compress(LOG))
    _check(score_logs([path], chunk_size=100), factor=2)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (gzip.compress(LOG)[:-40], "corrupt or truncated gzip"),
        (b"\x1f\x8b" + b"garbage" * 50, "corrupt or truncated gzip"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20, "not a kube-apiserver log"),
        (b"hello world\nthis is a text file\n", "not a kube-apiserver log"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(data)
    with pytest.raises(BisectorError, match=why) as info:
        score_logs([path])
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BisectorError, match=r"cannot read log .*missing\.log"):
        score_logs([tmp_path / "missing.log"])
    with pytest.raises(BisectorError, match="not a regular file"):
        score_logs([tmp_path])


def test_stdin_plain_and_gzip() -> None:
    for data in (LOG, gzip.compress(LOG)):
        result = subprocess.run(
            [sys.executable, "-m", "bisector", "score", "-", "--json"],
            input=data,
            capture_output=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert b'"conflicts": 3' in result.stdout


def test_stdin_cannot_join_a_rotated_set(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(LOG)
    with pytest.raises(BisectorError, match="stdin"):
        score_logs(["-", path])


def test_gs_object_gzip_encoded_without_suffix(gcs_client: Any) -> None:
    ensure_bucket(gcs_client, "kubernetes-jenkins")
    name = "logs/ci-kubernetes-kubemark-gce-scale/427/artifacts/m/kube-apiserver.log"
    upload_gzip_encoded(gcs_client, "kubernetes-jenkins", name, LOG)
    _check(score_logs([f"gs://kubernetes-jenkins/{name}"]))


def test_gs_plain_object_and_missing_object(gcs_client: Any) -> None:
    bucket = ensure_bucket(gcs_client, "plain-bucket")
    bucket.blob("kube-apiserver.log").upload_from_string(LOG)
    _check(score_logs(["gs://plain-bucket/kube-apiserver.log"]))
    with pytest.raises(BisectorError, match="does not exist"):
        score_logs(["gs://plain-bucket/nope.log"])


def test_gs_corrupt_gzip_object_is_a_clear_error(gcs_client: Any) -> None:
    bucket = ensure_bucket(gcs_client, "corrupt-bucket")
    bucket.blob("kube-apiserver.log").upload_from_string(b"\x1f\x8b\x08\x00" + b"garbage" * 50)
    with pytest.raises(BisectorError, match="corrupt or truncated gzip"):
        score_logs(["gs://corrupt-bucket/kube-apiserver.log"])


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_url_streams_plain_and_gzip(http_dir: tuple[Path, str]) -> None:
    root, base = http_dir
    (root / "kube-apiserver.log").write_bytes(LOG)
    (root / "rotated").write_bytes(gzip.compress(LOG))
    _check(score_logs([f"{base}/kube-apiserver.log"], chunk_size=50))
    _check(score_logs([f"{base}/rotated"]))
    with pytest.raises(BisectorError, match="cannot fetch"):
        score_logs([f"{base}/missing.log"])


def test_rotated_set_is_one_run_in_time_order(tmp_path: Path) -> None:
    older = tmp_path / "kube-apiserver.log-20170602-1496400000.gz"
    older.write_bytes(gzip.compress(text(mix_log("wrap42", start=0))))
    live = tmp_path / "kube-apiserver.log"
    dispatch = header(500, "E", "cacher.go:610") + "AAA: dispatching event nr 2"
    live.write_bytes(text([*mix_log("wrap42", start=100), dispatch]))
    for order in ([live, older], [older, live]):
        scores = score_logs(order)
        _check(scores, factor=2)
        window = scores.metrics["window"]
        assert isinstance(window, dict)
        assert window["first"].endswith("06-02T05:51:10.000000")
        assert window["seconds"] == pytest.approx(500.0)
        # write #2 is the older file's second successful write: POST at t=5
        assert scores.metrics["dispatch_lag_s"] == {"max": 495.0, "last": 495.0}


def test_rotation_suffix_orders_files_without_timestamps(tmp_path: Path) -> None:
    from bisector.logs.reader import order_sources

    names = ["kube-apiserver.log", "kube-apiserver.log.1", "kube-apiserver.log.2.gz"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    ordered = order_sources([tmp_path / n for n in names])
    assert [Path(src.spec).name for src, _ in ordered] == list(reversed(names))


def test_year_comes_from_mtime_across_new_year(tmp_path: Path) -> None:
    december = tmp_path / "kube-apiserver.log.1"
    january = tmp_path / "kube-apiserver.log"
    tail = " 7 wrap.go:42] PATCH /api/v1/nodes/n/status: (1ms) 409 [[k] 1:1]\n"
    december.write_text("I1231 23:59:58.000000" + tail)
    january.write_text("I0101 00:00:02.000000" + tail)
    stamp = datetime(2018, 1, 1, 0, 5).timestamp()
    for path in (december, january):
        os.utime(path, (stamp, stamp))
    scores = score_logs([january, december])
    assert scores.metrics["window"] == {
        "first": "2017-12-31T23:59:58.000000",
        "last": "2018-01-01T00:00:02.000000",
        "seconds": 4.0,
    }
    assert scores.metrics["conflicts_per_min"] == 30.0


def test_request_builder_sanity() -> None:
    assert request("wrap42", 0, "PATCH", "/x", 409).startswith("I0602 05:51:10.000000")


def test_the_same_log_twice_or_overlapping_logs_are_no_measurement(tmp_path: Path) -> None:
    """`score a.log a.log` read twice the conflicts (a good commit's count doubled past its
    threshold is a bad verdict); two launches' logs overlapping in time mix two runs."""
    from bisector.logs.errors import LogError

    log = tmp_path / "kube-apiserver.log"
    log.write_bytes(LOG)
    with pytest.raises(LogError, match="the same log given twice, or logs of two launches"):
        score_logs([log, log])
    other = tmp_path / "other-launch.log"
    other.write_bytes(text(mix_log("wrap42", start=3)))  # begins inside the first one
    with pytest.raises(LogError, match=r"begins .* before the log read before it ends"):
        score_logs([log, other])


def test_a_log_whose_times_run_backwards_is_no_measurement(tmp_path: Path) -> None:
    """A reversed log (`tac`), or `cat new.log old.log`, read a window of 0 s and was still
    judged; its lines are not one launch's in order."""
    from bisector.logs.errors import LogError

    backwards = tmp_path / "kube-apiserver.log"
    backwards.write_bytes(text([*mix_log("wrap42", start=100), *mix_log("wrap42", start=0)]))
    with pytest.raises(LogError, match="its times run backwards"):
        score_logs([backwards])
    # A line a goroutine stamped a moment before the one above it is still one log.
    late = [request("wrap42", 1.0, "GET", "/api/v1/nodes", 200)]
    ok = tmp_path / "ok.log"
    ok.write_bytes(text([*mix_log("wrap42", start=1.5), *late]))
    _check(score_logs([ok]))


REAL_ROTATION = Path(__file__).parent / "data" / "rotated-mid-disorder"


def test_a_real_log_rotated_where_its_lines_are_out_of_order_is_one_log(tmp_path: Path) -> None:
    """50 real lines of a 2017 kube-apiserver (kubernetes 7043372 on the procs backend, 100
    hollow nodes, 2 cores at load ~7; /work/meas/spread evals/002, 4 Dec 2026), cut into a
    rotated pair where the last line of .1 is stamped 20:02:03.890 and the first of the
    live file 20:02:02.332: glog stamps a line before it takes the write lock, so lines of
    one log run up to 1.6 s backwards (7-34 times per 6-minute log there). With 1 s of
    slack the pair was refused as "the same log given twice, or logs of two launches"."""
    logs = []
    written = datetime(2026, 12, 4, 20, 3, tzinfo=UTC).timestamp()  # glog has no year: mtime's
    for name in ("kube-apiserver.log.1", "kube-apiserver.log"):
        logs.append(tmp_path / name)
        logs[-1].write_bytes((REAL_ROTATION / name).read_bytes())
        os.utime(logs[-1], (written, written))
    scores = score_logs(logs)
    assert scores.metrics["lines"] == 50
    assert scores.unparsable_lines == 0  # the trace lines between are continuations
    # From the first stamped line of .1 to the last of the live file, as written.
    assert scores.metrics["seen"] == {
        "first": "2026-12-04T20:02:02.312655",
        "last": "2026-12-04T20:02:02.391668",
        "seconds": 0.079013,
    }
