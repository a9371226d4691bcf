"""The revert check: the bad endpoint with the confirmed culprits reverted, measured.

KernelCI's bisection requires it of its answer, and it is what the engineer of the
2017 hunt did by hand ("I reverted the second PR ... and I still have 100,000
conflicts"): a culprit whose revert does not restore the good value is at best part
of the answer. The reverted endpoint is the tool's own commit (GitRepo.revert_onto),
checked out, built and measured at full length like any candidate, so infrastructure
failures are skips, every run is journaled, and a resumed run measures nothing twice.
A revert that does not apply is said with its files: no failure of the run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bisector.bisection.start import Bisection
from bisector.errors import BisectorError
from bisector.report.model import RevertCheck
from bisector.search.decide import ConfirmRule, DecisionRule

PHASE = "revert"  # Measurement.phase of its runs (full length, never ended early)


def revert_rule(b: Bisection) -> DecisionRule:
    """How its runs decide: as the confirmation's (one flipped run is measured again)."""
    s = b.settings
    if s.noise_aware:
        return ConfirmRule("good", max(3, s.repeats), s.worse)
    return b.rule


def revert_runs(b: Bisection) -> int:
    """Runs the revert check is expected to take (the ETA's and the cost model's)."""
    return 1 if b.settings.noise_aware else b.settings.repeats // 2 + 1


def check_revert(b: Bisection, culprits: Sequence[str], threshold: float) -> RevertCheck:
    """Measure the bad endpoint with `culprits` reverted; from now on every candidate
    that contains them is measured with them reverted (the next hunt's)."""
    try:
        sub = b.evaluator.reverts.of(b.bad, culprits)
    except (BisectorError, OSError) as exc:  # git or the disk, not the revert: the
        # confirmed culprit's report still stands, its revert check not measured
        reason = f"the revert could not be made: {exc}"
        b.progress.note(f"revert check: {reason}")
        return RevertCheck(b.bad, list(culprits), None, "not measured", "skip", None, reason=reason)
    if not sub.reverted:  # nothing of them on the bad endpoint, as git answered: measuring
        # would only measure the bad endpoint again
        reason = "none of the culprits is an ancestor of the bad endpoint, as git answered"
        return RevertCheck(b.bad, [], None, "not measured", "skip", None, reason=reason)
    if sub.conflict:
        b.progress.note(f"revert check: {sub.conflict}")
        return RevertCheck(
            b.bad, list(sub.reverted), None, "conflict", None, None,
            reason=sub.conflict, conflict_files=list(sub.conflict_files),
        )  # fmt: skip
    b.evaluator.reverts.set(culprits)
    names = ", ".join(c[:12] for c in sub.reverted)
    why = f"the bad endpoint with {names} reverted: does the revert restore the good value?"
    b.evaluator.runs_after_search = 0
    b.evaluator.expect(revert_runs(b), full_length=True)
    (decision,) = b.evaluator.decide_each([b.bad], threshold, [revert_rule(b)], PHASE, why)
    values = [m.value for m in b.evaluator.runs(b.bad, PHASE) if m.value is not None]
    verdict = decision.verdict or "skip"
    outcome = {"good": "restores", "bad": "does not restore"}.get(verdict, "not measured")
    value = float(statistics.median(values)) if values else None
    return RevertCheck(
        b.bad,
        list(sub.reverted),
        sub.build,
        outcome,
        verdict,
        value,
        runs=values,
        reason=decision.reason if verdict == "skip" else "",
    )
