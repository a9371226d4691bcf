from __future__ import annotations

import io

from bisector.search.progress import LiveProgress, PlainProgress, make_progress


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    progress = make_progress(estimate_s=600, stream=out)
    assert isinstance(progress, PlainProgress)
    progress.status("bisect: evaluating", "a" * 40, steps_left=3)
    progress.note("a is good")
    progress.stop()
    assert out.getvalue().splitlines() == [
        "bisector: bisect: evaluating | aaaaaaaaaaaa | ~3 runs left | ETA 30m00s",
        "bisector: a is good",
    ]


def test_live_display_updates_phase_candidate_steps_and_eta() -> None:
    progress = LiveProgress(estimate_s=60)
    progress.status("confirm", "b" * 40, steps_left=2)
    status = progress.line.text()
    progress.stop()
    assert "confirm | bbbbbbbbbbbb | ~2 runs left | ETA 2m00s" in status
