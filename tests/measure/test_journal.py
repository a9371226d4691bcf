from __future__ import annotations

from pathlib import Path

from bisector.measure.evaluation import Measurement
from bisector.measure.journal import Journal, append_line, read_lines


def test_torn_last_line_is_ignored_and_not_glued(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    append_line(path, {"type": "a"})
    with path.open("a") as fh:
        fh.write('{"type": "tor')  # what a kill -9 mid-write leaves
    append_line(path, {"type": "b"})
    assert [r["type"] for r in read_lines(path)] == ["a", "b"]


def test_measurements_survive_reopening_and_are_shared_per_fingerprint(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    journal = Journal(tmp_path / "run1", cache, "fp1")
    journal.add(Measurement("c1", "tree1", "bisect", value=3.0))
    journal.add(Measurement("c1", "tree1", "confirm", value=3.0))
    again = Journal(tmp_path / "run1", cache, "fp1")
    assert [m.value for m in again.for_tree("tree1")] == [3.0]
    assert len(again.for_tree("tree1", confirm=True)) == 1
    assert not again.cached_ids
    other_run = Journal(tmp_path / "run2", cache, "fp1")
    assert [m.commit for m in other_run.for_tree("tree1")] == ["c1"]
    assert other_run.for_tree("tree1", confirm=True) == []  # confirmation is never reused
    assert len(other_run.cached_ids) == 1
    assert Journal(tmp_path / "run3", cache, "fp2").for_tree("tree1") == []
