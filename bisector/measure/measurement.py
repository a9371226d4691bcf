"""What one evaluation of one commit measured: the journal's record of it.

A measurement with no `value` is a skip and says why (`reason`, and `skipped_at`: the
step that failed). Journals written before a field existed still read (`from_dict`):
what they said another way is read back into the field.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from bisector.errors import BuildError
from bisector.logs import Scores

# A candidate whose reverts do not apply (bisector.measure.reverts): the tree's, final.
REVERT_SKIP = "revert"

# A build that failed says the tree does not build, unless its output says the machine
# was the trouble (a full disk, memory, a timeout, a kill, the network), or the tool itself
# could not do an OS call (an `[Errno N]` of an OSError the build step let out: a missing
# Go, a directory it may not write): none of those is the tree's, so none is final.
_MACHINE_TROUBLE = re.compile(
    r"no space left on device|disk quota exceeded|cannot allocate memory|out of memory"
    r"|\[Errno \d+\]"
    r"|\btimed out\b|\btimeout\b|\bkilled\b|\bsignal \d+|connection (?:refused|reset)"
    r"|temporary failure in name resolution|network is unreachable|could not resolve host",
    re.IGNORECASE,
)


@dataclass
class Measurement:
    """What one evaluation of one commit measured (journaled as one JSON line)."""

    commit: str
    tree: str
    phase: str  # "endpoint", "bisect" or "confirm"
    value: float | None = None  # None: no verdict possible, see `reason`
    metrics: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    # The step whose InfraError made this run a skip (its `kind`: "build", "launch",
    # "collect", "checkout", "teardown", ...); None: measured, or a log that said nothing.
    skipped_at: str | None = None
    duration_s: float = 0.0
    logs: list[str] = field(default_factory=list)
    launch_attempts: int = 0
    eval_dir: str = ""
    teardown_error: str | None = None
    started_at: float = 0.0
    slot: int = 0
    why: str = ""  # why the search measured this commit
    window: dict[str, Any] | None = None  # {start, end, span_s} of the log (epoch seconds)
    stopped_early: str | None = None  # why the warmup ended before its time, if it did
    prefetched_build: bool = False  # the build was made ahead, while another cluster ran
    early_verdict: str | None = None  # "bad"/"good" when the warmup ended early (stopped_early)
    # [warmup seconds, value] at each look at the growing log (watched warmups only).
    trajectory: list[list[float]] = field(default_factory=list)
    launched_at: float = 0.0  # wall time the (last) launch attempt began
    ran_s: float | None = None  # launch-ready to collect: how long the cluster ran
    # The share of the offered load that ran in the warmup, when the backend counts it
    # (procs: node watch events against the hollow nodes' status writes), and in words.
    load_fraction: float | None = None
    load: str = ""
    head: str = ""  # digest of the log's first bytes (provenance.log_head): the same file again?
    # Seconds spent in each phase (build, launch, warmup, collect, teardown) as measured
    # here: the ETA's figures (bisector.cost.MeasuredPhases). Older journals: empty.
    phase_s: dict[str, float] = field(default_factory=dict)
    # Where the evaluation ran when not in the driving process (a Kubernetes Job's pod and
    # node: bisector.executors); empty: here.
    ran_on: str = ""
    # Culprits found earlier in the run, reverted in this candidate before its build
    # (bisector.measure.reverts), and the tool's commit that was built then ("": the
    # candidate's own). `tree` is that commit's.
    reverted: list[str] = field(default_factory=list)
    built: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        known = set(cls.__dataclass_fields__)
        m = cls(**{k: v for k, v in data.items() if k in known})
        if m.stopped_early and m.early_verdict is None:
            m.early_verdict = "bad"  # journals before early good verdicts: only bad stopped
        if "skipped_at" not in data and m.value is None and m.reason:
            # Journals before `skipped_at` said the step only as the reason's first word.
            head, colon, _ = m.reason.partition(":")
            m.skipped_at = head if colon and head.isalpha() else None
        return m

    @property
    def span_s(self) -> float | None:
        return None if self.window is None else float(self.window.get("span_s", 0.0))

    @property
    def infra_skip(self) -> bool:
        """A skip the infrastructure caused (launch, collect, the log, a teardown, a full
        disk): it says nothing about the tree, so it is never final (a later session of
        the run, or a later run, measures the commit again). A build that failed on its
        own (the tree does not build, the patch does not apply) is the tree's."""
        if self.value is not None:
            return False
        if self.skipped_at == REVERT_SKIP:
            return False  # the reverts do not apply to this tree: that is the tree's
        if self.skipped_at != BuildError.kind:
            return True
        # The build's own output says when the machine, not the tree, failed it.
        return bool(_MACHINE_TROUBLE.search(self.reason or ""))


def log_window(scores: Scores) -> dict[str, Any] | None:
    """{start, end, span_s} of the time the scored log covers; None if it has no times."""
    window = scores.window or scores.seen
    if window is None:
        return None
    return {"start": window.first, "end": window.last, "span_s": window.seconds}
