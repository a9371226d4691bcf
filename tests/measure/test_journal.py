from __future__ import annotations

from pathlib import Path

from bisector.measure.journal import Journal, append_line, read_lines
from bisector.measure.measurement import Measurement


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


def _session(journal: Journal, first: bool, *runs: Measurement) -> None:
    from bisector.measure.journal import Resume, Start

    journal.write(Start() if first else Resume())
    for m in runs:
        journal.add(m)


def _skip(kind: str) -> Measurement:
    return Measurement("x", "treeX", "bisect", reason=f"{kind}: it failed", skipped_at=kind)


def test_a_tree_that_failed_to_launch_in_two_sessions_stays_a_skip(tmp_path: Path) -> None:
    """Issue 30: each resume built and launched it again (launch_attempts launches)."""
    cache = tmp_path / "cache.jsonl"
    journal = Journal(tmp_path / "run", cache, "fp")
    _session(journal, True, Measurement("y", "treeY", "bisect", value=1.0), _skip("launch"))
    once = Journal(tmp_path / "run", cache, "fp")
    assert once.for_tree("treeX") == [] and once.unlaunchable == {}  # one session: retried
    _session(once, False, _skip("launch"))
    twice = Journal(tmp_path / "run", cache, "fp")
    assert [m.value for m in twice.for_tree("treeX")] == [None, None]  # the rule says skip
    assert twice.unlaunchable == {"x": 2}
    assert twice.retired == []
    assert "treeX" not in cache.read_text()  # kept for this run only, never cached


def test_skips_that_are_not_the_trees_launch_stay_retried(tmp_path: Path) -> None:
    """A collect failure twice, or launch failures in sessions where nothing else was
    measured (an outage of the machine), say nothing about the tree."""
    cache = tmp_path / "cache.jsonl"
    journal = Journal(tmp_path / "run", cache, "fp")
    _session(journal, True, Measurement("y", "treeY", "bisect", value=1.0), _skip("collect"))
    _session(journal, False, _skip("collect"))
    _session(
        journal,
        False,
        Measurement("z", "treeZ", "bisect", reason="launch: x", skipped_at="launch"),
        _skip("launch"),
    )
    _session(journal, False, _skip("launch"))
    reopened = Journal(tmp_path / "run", cache, "fp")
    assert reopened.for_tree("treeX") == []
    assert reopened.unlaunchable == {}
    assert len(reopened.retired) == 5
