"""`bisector nightly`: from a CI regression to a named commit and a report, unattended.

    run_nightly(config_path) -> exit code

For each configured job: score the CI runs the database has not seen, find the
change points of the metric in the window (a lone bad run is none), and hunt the
newest regression not hunted yet, once (one new hunt per job a night): bisect the
commits between the last good and the first bad run with the job's backend,
within its budget, then write the report (and upload it). Exit codes: the
`NightlyExit` table in bisector/exitcodes.py. Over several jobs the highest code wins.
"""

from __future__ import annotations

from bisector.nightly.runner import run_nightly

__all__ = ["run_nightly"]
