"""A run directory's files at rest (issue 22, point 7): logs gzipped once scored, never
lost to that; what the run uses on disk; pruning to the reports."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bisector.logs import score_logs
from bisector.runfiles import disk_use, gzip_log, gzip_logs, prune_logs, size_text

LINE = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
)


def test_a_gzipped_log_scores_as_the_plain_one(tmp_path: Path) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text(LINE * 500)
    before = score_logs([str(log)]).metrics["conflicts"]
    packed = gzip_log(log)
    assert packed == tmp_path / "kube-apiserver.log.gz" and not log.exists()
    assert gzip.decompress(packed.read_bytes()) == (LINE * 500).encode()
    assert packed.stat().st_size < len(LINE * 500) / 10
    assert score_logs([str(packed)]).metrics["conflicts"] == before == 500
    assert gzip_log(packed) == packed  # already gzip: as it is


def test_what_cannot_be_gzipped_stays_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gzip_logs(["gs://bucket/log", str(tmp_path / "absent.log")]) == [
        "gs://bucket/log",
        str(tmp_path / "absent.log"),
    ]
    log = tmp_path / "kube-apiserver.log"
    log.write_text(LINE)

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("shutil.copyfileobj", full)
    assert gzip_log(log) == log and log.read_text() == LINE  # the scored log is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kube-apiserver.log"]


def test_disk_use_and_prune(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "evals" / "001-abc" / "logs").mkdir(parents=True)
    (run / "evals" / "001-abc" / "logs" / "kube-apiserver.log.gz").write_bytes(b"x" * 5000)
    (run / "evals" / "001-abc" / "build.log").write_bytes(b"b" * 100)
    (run / "report.html").write_bytes(b"r" * 300)
    use = disk_use(run)
    assert (use.total_bytes, use.logs_bytes, use.kept_bytes) == (5400, 5000, 400)
    assert prune_logs(run) == 5000
    assert disk_use(run).total_bytes == 400 and (run / "evals" / "001-abc" / "build.log").exists()


def test_sizes_read_as_people_write_them() -> None:
    assert [size_text(n) for n in (12, 4_200, 8_100_000, 338_000_000, 2_500_000_000)] == [
        "12 B",
        "4.2 kB",
        "8.1 MB",
        "338 MB",
        "2.5 GB",
    ]
