"""The confirmation: a culprit is confirmed only on full-length measurements.

"C is the culprit" claims C bad and each of its parents good (a merge's branch tip too),
and, for a culprit the search reached by descending into merges, each such merge bad and
its first parent good (the first-parent search's verdicts that chose the branch). The
culprit and its first parent are always measured again, at full length (phase
`confirm`, fresh runs). Any other commit of the claim whose verdict did not rest on
full-length runs is measured again too: one an early good verdict decided (a shortened
run: a regression showing later than the bad endpoint's passes as good), one a person
marked (`bisector mark`: no run at all), or, when either was used in the run, one
decided without runs of its own (git inferred it from others). An early bad verdict
is certain (the metric only grows) and stands.

A commit measured against its claim makes the culprit not confirmed, and says why; when
early good verdicts were used, that withdraws them all and the search runs again
(bisector.bisection.pipeline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bisector.bisection.start import Bisection
from bisector.gitrepo import GitRepo
from bisector.measure.journal import Mark, read_journal
from bisector.measure.measurement import Measurement
from bisector.search.base import Found
from bisector.search.decide import ConfirmRule, DecisionRule


@dataclass(frozen=True)
class Claim:
    """One commit's verdict the culprit claim rests on."""

    commit: str
    expected: str  # "bad" or "good"
    role: str  # what it is to the culprit, for messages


@dataclass
class Confirmation:
    """What measuring the claim at full length said."""

    verdicts: dict[str, str] = field(default_factory=dict)  # commit -> full-length verdict
    problems: list[str] = field(default_factory=list)  # why it is not confirmed
    withdraw: str = ""  # why the early good verdicts cannot stand ("" when they can)

    @property
    def confirmed(self) -> bool:
        return bool(self.verdicts) and not self.problems


def claims(
    repo: GitRepo, culprit: str, descended: Sequence[str], *, branch_bad: bool = False
) -> list[Claim]:
    """What "`culprit` is the culprit" rests on: it, its parents, the merges descended
    into (outermost first) and their first parents, each commit once. `branch_bad`: the
    culprit is a merge whose branch holds the regression (its inner commits could not
    be narrowed down): it is claimed against its first parent only."""
    info = repo.info(culprit)
    out = [Claim(culprit, "bad", "the culprit")]
    parents = info.parents[:1] if branch_bad else info.parents
    for i, parent in enumerate(parents):
        role = "the culprit's parent" if i == 0 else "the culprit's merged branch's tip"
        out.append(Claim(parent, "good", role))
    for merge in descended:
        out.append(Claim(merge, "bad", f"the merge {merge[:12]} the search descended into"))
        before = repo.info(merge).parents[0]
        out.append(Claim(before, "good", f"the first parent of the merge {merge[:12]}"))
    seen: set[str] = set()
    unique = []
    for claim in out:
        if claim.commit not in seen:
            seen.add(claim.commit)
            unique.append(claim)
    return unique


def confirm(b: Bisection, found: Found, descended: Sequence[str], threshold: float) -> Confirmation:
    """Measure the claim's commits at full length (see the module docstring)."""
    if found.culprit is None:
        return Confirmation()
    claim = claims(b.repo, found.culprit, descended, branch_bad=found.inside is not None)
    risky = _early_goods_used(b) or _marked_any(b)
    basis = {c.commit: _basis(b, c, risky) for c in claim}
    # The culprit and its first parent always; the rest when their verdict was not a
    # full-length one.
    todo = [c for i, c in enumerate(claim) if i < 2 or basis[c.commit]]
    b.evaluator.runs_after_search = 0
    # The culprit's and its parent's runs profile the apiserver: what grew, and where.
    b.evaluator.profiled = {claim[0].commit, claim[1].commit} if len(claim) > 1 else set()
    per_commit = 1 if b.settings.noise_aware else b.settings.repeats // 2 + 1
    b.evaluator.expect(len(todo) * per_commit, full_length=True)
    rules = [_rule(b, c) for c in todo]
    decided: list[str] = []
    for start in range(0, len(todo), b.evaluator.slots):
        chunk = todo[start : start + b.evaluator.slots]
        commits = [c.commit for c in chunk]
        # Each run says what it is to the claim (the report's "why there").
        whys = [_why(c) for c in chunk]
        part = b.evaluator.decide_each(
            commits, threshold, rules[start : start + len(chunk)], "confirm", whys
        )
        decided += [d.verdict or "skip" for d in part]
        reasons = [d.reason for d in part]
        for c, verdict, reason in zip(chunk, decided[start:], reasons, strict=True):
            if verdict == "skip":
                basis[c.commit] = f"could not be measured at full length: {reason}"
    out = Confirmation(verdicts={c.commit: v for c, v in zip(todo, decided, strict=True)})
    for c, verdict in zip(todo, decided, strict=True):
        if verdict == c.expected:
            continue
        if verdict == "skip":
            out.problems.append(f"{c.role} {c.commit[:12]} {basis[c.commit]}")
            continue
        said = basis[c.commit] or f"was {c.expected} in the search"
        out.problems.append(f"{c.role} {c.commit[:12]} {said}; measured {verdict} at full length")
        if verdict == "bad" and _early_goods_used(b):
            used = sum(1 for m in b.evaluator.used.values() if _early_good(m))
            out.withdraw = (
                f"{c.role} {c.commit[:12]} measured bad at full length, after {used} "
                "search run(s) ended early as good"
            )
    return out


def _why(claim: Claim) -> str:
    if claim.role == "the culprit":
        return "confirming the culprit against its parent"
    if claim.role == "the culprit's parent":
        return "confirming the culprit's parent against the culprit"
    return f"confirming the claim at full length: {claim.role}"


def _rule(b: Bisection, claim: Claim) -> DecisionRule:
    # Runs that may flip (a noise model): one disagreeing confirmation run is measured
    # again, so one flipped run does not undo a culprit the posterior is sure of.
    if b.settings.noise_aware:
        return ConfirmRule(claim.expected, max(3, b.settings.repeats), b.settings.worse)
    return b.rule


def _early_good(m: Measurement) -> bool:
    return m.phase == "bisect" and m.early_verdict == "good"


def _early_goods_used(b: Bisection) -> bool:
    """Whether early good verdicts decided anything in this search (not withdrawn)."""
    if b.evaluator.early_good_withdrawn:
        return False
    return any(_early_good(m) for m in b.evaluator.used.values())


def _marked_any(b: Bisection) -> bool:
    return any(isinstance(r, Mark) for r in read_journal(b.journal.path))


def _basis(b: Bisection, claim: Claim, risky: bool) -> str:
    """Why `claim`'s verdict in the search was not a full-length one ("" when it was)."""
    marked = b.evaluator.mark(claim.commit)
    if marked is not None:
        return f"was marked {marked.verdict} by hand"
    runs = b.evaluator.runs(claim.commit, "bisect")
    if claim.expected == "good" and any(m.early_verdict == "good" for m in runs):
        return "ended early as good"
    if risky and not any(m.value is not None for m in runs):
        return f"was {claim.expected} in the search without a run of its own"
    return ""
