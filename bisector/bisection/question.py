"""One run directory answers one question.

A run directory's journal holds the measurements of one question: a range, and what
`RunSettings.question` names (the backend and its config, the metric, the threshold,
the walk, the repeats, the search). Resumed with the same question, the journal is
reused measurement by measurement; asked another question, its measurements would
answer it (another metric's culprit "confirmed" with 0 evaluations). The journal's
`start` record keeps the question; a run that asks another one is refused, or, with
`--fresh`, the earlier run's records are moved to `<run dir>/earlier/<time>/` (kept,
not deleted) and the directory starts over.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from bisector.backends.resources import ResourceRecord
from bisector.bisection.layout import RunLayout
from bisector.errors import BisectorError
from bisector.measure.journal import Measured, Record, Start, ThresholdSet
from bisector.settings import RunSettings

# The parts of RunSettings.question(), in its order (tests/faults/test_run_dir_question.py
# checks the count). The first is the measurement fingerprint.
QUESTION_PARTS = (
    "backend, backend config, warmup or seed",
    "metric",
    "threshold",
    "first_parent",
    "paths",
    "repeats",
    "error_rate",
    "likelihood",
    "confidence",
    "parallel",
    "max_evaluations",
    "endpoint_runs",
)
# What an earlier run's records are moved to by --fresh, under the run directory.
EARLIER = "earlier"
_MOVED = ("journal.jsonl", "evals", "report.json", "report.md", "report.html")


def other_question(records: list[Record], settings: RunSettings, good: str, bad: str) -> str | None:
    """How the question of the run journaled in `records` differs from this one (None:
    the same question, or no run yet)."""
    start = next((r for r in records if isinstance(r, Start)), None)
    if start is None:
        return None
    if start.good and start.bad and (start.good, start.bad) != (good, bad):
        return f"the range {start.good[:12]}..{start.bad[:12]}, not {good[:12]}..{bad[:12]}"
    if start.question:
        return _differences(start.question, settings.question())
    # A journal from before the question was recorded: what its records still tell.
    prints = {r.fingerprint for r in records if isinstance(r, Measured) and r.fingerprint}
    if prints and prints != {settings.fingerprint()}:
        return f"the {QUESTION_PARTS[0]}"
    given = next((r for r in records if isinstance(r, ThresholdSet)), None)
    if given is not None:
        before = given.value if given.how == "given" else None
        if before != settings.threshold:
            return f"threshold {before!r}, not {settings.threshold!r}"
    return None


def _differences(before: str, now: str) -> str | None:
    if before == now:
        return None
    try:
        old, new = json.loads(before), json.loads(now)
    except json.JSONDecodeError:
        return "the question"
    if not isinstance(old, list) or len(old) != len(new) or len(new) != len(QUESTION_PARTS):
        return "the question"
    parts = [(name, a, b) for name, a, b in zip(QUESTION_PARTS, old, new, strict=True) if a != b]
    if any(name == "metric" for name, _, _ in parts):
        parts = [p for p in parts if p[0] != QUESTION_PARTS[0]]  # the metric says it
    return ", ".join(
        f"the {name}" if name == QUESTION_PARTS[0] else f"{name} {a!r}, not {b!r}"
        for name, a, b in parts
    )


def refuse(root: Path, why: str) -> BisectorError:
    return BisectorError(
        f"{root} holds the run of another question ({why}); pass another --run-dir, or "
        f"--fresh to start this one over (the earlier run is kept in {root / EARLIER})"
    )


def set_aside(layout: RunLayout, still_up: bool) -> Path | None:
    """Move the earlier run's records to `earlier/<time>/` (--fresh); None if none.

    Refused while it may have left a cluster up: its journal and resource record are
    what `bisector cleanup` tears that down from.
    """
    if not layout.journal.exists():
        return None
    if still_up or ResourceRecord(layout.root).load():
        raise BisectorError(
            f"the earlier run in {layout.root} may have left a cluster up; tear it down "
            f"first: bisector cleanup --run-dir {layout.root}"
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = layout.root / EARLIER / stamp
    n = 1
    while target.exists():
        n += 1
        target = layout.root / EARLIER / f"{stamp}-{n}"
    target.mkdir(parents=True)
    for name in _MOVED:
        if (layout.root / name).exists():
            shutil.move(layout.root / name, target / name)
    return target
