"""The skip rules the mutation audit found unguarded (issue 30): each test asserts the
behaviour, so the one-line bug that loosens it fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.measure.evaluation import evaluate_candidate
from tests.helpers.local_backend import CONFLICT, WRITE
from tests.measure.test_measure import FakeBackend

GARBLED = "\x8f\x01\x02 torn bytes \x00 of a damaged file"


# -- garbled lines -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("garbled", "scored"),
    [(0, True), (1, True), (2, False), (10, False), (15, False), (50, False), (190, False)],
    ids=["none", "one-cut-line", "two", "1%", "1.5%", "5%", "19%"],
)
def test_a_log_with_more_garbled_lines_than_a_cut_one_is_not_scored(
    tmp_path: Path, garbled: int, scored: bool
) -> None:
    """The bound (MAX_GARBLED_PER_FILE): klog writes each line whole, so a healthy file
    holds at most one garbled line, the one cut where it was copied mid-write; more is
    damage, which does not choose its lines. A share of the log is no bound: 1 % of a
    1,000-line log is 10 lines, of a million-line log 10,000, more than a bad commit's
    409s. Here 1,000 lines, 900 of them 409s: from 2 garbled lines (0.2 %) to 19 %, no
    value."""
    lines = (CONFLICT + "\n") * 900 + (WRITE + "\n") * 100 + (GARBLED + "\n") * garbled
    backend = FakeBackend(lines=lines)
    m = evaluate_candidate(backend, Candidate("a" * 40, tmp_path, tmp_path / "eval"),
                           metric="conflicts")  # fmt: skip
    if scored:
        assert m.value == 900 and m.reason is None, m.reason
    else:
        assert m.value is None, m
        assert m.reason is not None and "garbled" in m.reason, m.reason
