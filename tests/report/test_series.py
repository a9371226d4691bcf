"""The smoking gun's series: one pass over a run's logs, counting what `bisector score` counts."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bisector.logs import score_logs
from bisector.logs.sources import open_source
from bisector.report.series import read_series
from tests.helpers.sample_report import write_log


def test_counts_per_second_match_the_scorer(tmp_path: Path) -> None:
    log = write_log(tmp_path / "a.log", 4, [3, 40, 100])
    s = read_series([log])
    scores = score_logs([log])
    assert int(s.conflicts.sum()) == scores.metrics["conflicts"] == 4 * 90
    assert int(s.writes.sum()) == scores.metrics["node_writes"] == 5 * 120
    assert s.conflicts[:30].sum() == 0 and all(s.conflicts[30:120] == 4)  # from second 30 on
    assert s.cacher == {0: 3, 10: 40, 20: 100}
    starts, per_min = s.per_minute(s.conflicts, 30)
    assert list(starts) == [0, 30, 60, 90] and list(per_min) == [0, 240, 240, 240]


def test_a_rotated_gzip_set_reads_as_one_run_in_time_order(tmp_path: Path) -> None:
    whole = write_log(tmp_path / "whole.log", 2, [5, 50])
    lines = whole.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    older = tmp_path / "kube-apiserver.log.1.gz"
    older.write_bytes(gzip.compress("".join(lines[:half]).encode()))
    live = tmp_path / "kube-apiserver.log"
    live.write_text("".join(lines[half:]))
    a, b = read_series([live, older]), read_series([whole])
    assert list(a.conflicts) == list(b.conflicts) and list(a.writes) == list(b.writes)
    assert a.cacher == b.cacher


def test_each_log_is_opened_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write_log(tmp_path / "a.log", 1, [1])
    opened: list[str] = []

    def counting(source):  # type: ignore[no-untyped-def]
        opened.append(source.spec)
        return open_source(source)

    monkeypatch.setattr("bisector.report.series.open_source", counting)
    read_series([log], chunk_size=4096)  # many chunks, still one pass
    assert opened == [str(log)]
