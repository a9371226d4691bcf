"""The progress vocabulary (bisector/search/progress.py): what a reading of a watched
warmup says."""

from __future__ import annotations

from bisector.search.progress import Reading


def test_a_reading_says_the_metric_so_far_in_the_early_verdicts_words() -> None:
    bad = Reading("conflicts", 742, 77, 30, 300)
    assert bad.describe() == "conflicts 742 >= 77: bad after 30s of 5m00s"
    assert Reading("conflicts", 12, 77, 60, 300).describe() == (
        "conflicts 12 < 77 after 1m00s of 5m00s"
    )
    assert Reading("conflicts", 12, None, 60, 0).describe() == "conflicts 12 after 1m00s"
