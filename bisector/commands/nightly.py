"""`bisector nightly --config FILE`: watch CI jobs, hunt new regressions, report them.

Exit codes: 0 nothing new, 3 culprit found and reported, 4 regression reported
but not bisected to a culprit, 2 bad config, 5 another nightly is running.
"""

from __future__ import annotations

from pathlib import Path

from bisector.nightly import run_nightly


def nightly(config: Path) -> int:
    return run_nightly(config)
