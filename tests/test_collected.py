"""The evidence files a backend leaves beside the log, read back by the metric sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.collected import PROCESSES, ProcessUsage, read_processes, write_processes
from bisector.errors import CollectError


def test_process_usages_round_trip(tmp_path: Path) -> None:
    usages = [
        ProcessUsage("kube-apiserver", 382.5, 900 << 20, 1000.0, 1300.0),
        ProcessUsage("etcd", 41.0, 120 << 20, 1000.0, 1300.0),
    ]
    write_processes(tmp_path, usages)
    assert read_processes(tmp_path) == {u.name: u for u in usages}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"processes": {}}',
        '{"processes": [{"name": "x"}]}',
        '{"processes": [{"name": "x", "cpu_s": "nan", "peak_rss_bytes": 1, "start": 0, "end": 1}]}',
        '{"processes": [{"name": "x", "cpu_s": -1, "peak_rss_bytes": 1, "start": 0, "end": 1}]}',
        '{"processes": [{"name": "x", "cpu_s": 1, "peak_rss_bytes": 1, "start": 5, "end": 1}]}',
        '{"processes": ["x"]}',
    ],
)
def test_a_garbled_process_file_is_a_collect_error(tmp_path: Path, text: str) -> None:
    (tmp_path / PROCESSES).write_text(text)
    with pytest.raises(CollectError):
        read_processes(tmp_path)


def test_a_missing_process_file_is_a_collect_error(tmp_path: Path) -> None:
    with pytest.raises(CollectError, match="no process measurements"):
        read_processes(tmp_path)
