"""`bisector nightly`: from a CI regression to a named commit and a report, unattended.

    run_nightly(config_path) -> exit code

For each configured job: score the CI runs the database has not seen, look for
a new step in the metric (a lone bad run is none), and hunt it once: bisect the
commits between the last good and the first bad run with the job's backend,
within its budget, then write the report (and upload it). Exit codes: 0 nothing
new, 3 culprit found and reported, 4 regression reported but not bisected to a
culprit (budget, no backend, inconclusive, failed), 2 bad config, 5 another
nightly holds the lock. Over several jobs the highest code wins.
"""

from __future__ import annotations

from bisector.nightly.runner import (
    EXIT_FOUND,
    EXIT_NOTHING,
    EXIT_UNBISECTED,
    run_nightly,
)
from bisector.nightly.store import EXIT_BUSY

__all__ = ["EXIT_BUSY", "EXIT_FOUND", "EXIT_NOTHING", "EXIT_UNBISECTED", "run_nightly"]
