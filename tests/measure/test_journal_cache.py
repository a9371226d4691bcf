"""The measurement cache keeps full-length runs only (issue 30, the mutation audit).

A run that stopped early (an early bad or good verdict) has a value that only says it
passed, or stayed under, its own run's threshold over a shortened warmup: a later run
promised full-length measurements (another threshold, a confirmation) must measure
again. Neither is written to the cache, nor read from one an older version wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.measure.journal import Journal, Measured, append_line, read_journal
from bisector.measure.measurement import Measurement

FINGERPRINT = "f" * 16


def _run(tree: str, *, stopped_early: str | None = None, verdict: str | None = None) -> Measurement:
    m = Measurement("c" * 40, tree, "bisect", value=300.0, ran_s=30.0)
    m.stopped_early, m.early_verdict = stopped_early, verdict
    return m


EARLY = [
    pytest.param("conflicts 300 >= 250 after 30s of 10m00s", "bad", id="early-bad"),
    pytest.param("conflicts 3 on course to stay under 250 after 5m", "good", id="early-good"),
]


@pytest.mark.parametrize(("stopped", "verdict"), EARLY)
def test_a_run_that_stopped_early_is_not_cached(tmp_path: Path, stopped: str, verdict: str) -> None:
    cache = tmp_path / "measurements.jsonl"
    journal = Journal(tmp_path / "run" / "journal.jsonl", cache, FINGERPRINT)
    early, full = _run("t-early", stopped_early=stopped, verdict=verdict), _run("t-full")
    journal.add(early)
    journal.add(full)
    cached = [r.measurement.id for r in read_journal(cache) if isinstance(r, Measured)]
    assert cached == [full.id]  # never written: an older reader would reuse it
    later = Journal(tmp_path / "later" / "journal.jsonl", cache, FINGERPRINT)
    assert later.for_tree("t-early") == []
    assert [m.tree for m in later.for_tree("t-full")] == ["t-full"]


@pytest.mark.parametrize(("stopped", "verdict"), EARLY)
def test_a_cached_run_that_stopped_early_is_not_reused(
    tmp_path: Path, stopped: str, verdict: str
) -> None:
    """A cache an older version wrote, holding a run that stopped early: not reused."""
    cache = tmp_path / "measurements.jsonl"
    early = _run("t-early", stopped_early=stopped, verdict=verdict)
    append_line(cache, Measured(FINGERPRINT, early).to_json())
    later = Journal(tmp_path / "later" / "journal.jsonl", cache, FINGERPRINT)
    assert later.for_tree("t-early") == []
    assert early.id not in later.cached_ids
