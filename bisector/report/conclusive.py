"""What a run that ended without a single culprit established, said before anything else.

A run that ends "inconclusive" (only commits that could not be measured are left between
a good one and a bad one) or "unsure" (the evaluation budget ran out first) still
narrowed the regression down: it came in after the last good commit and at or before the
first bad one. `established` reads that from the report (report.json's `conclusive`);
the texts below say it, with what to do next, for the run's summary, report.md,
report.html and the block to paste into an issue alike.
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Callable

from bisector.report.facts import runs_of, short, split_reason
from bisector.report.facts import value_text as _value
from bisector.report.model import Between, Bound, Conclusive, Evaluation, Mark, Report
from bisector.report.wording import same_tree_plain

# Lines of commits between the bounds the run's summary shows (report.md shows all).
SUMMARY_BETWEEN = 10
# Consecutive commits no run was made of, from this many on, said in one line.
QUIET_STRETCH = 3
NOT_MEASURED = "not measured"


def established(report: Report, subject: Callable[[str], str] | None = None) -> Conclusive | None:
    """The bounds of the regression and the commits between, for a report without a
    culprit; None with a culprit, or when the search named no commits it could be.
    `subject`: a commit's subject, for commits no run measured."""
    if report.culprit is not None:
        return None
    likely = report.search.likely_range
    unsure = report.status == "unsure" and likely is not None
    suspects = list(likely.commits) if unsure and likely is not None else report.candidates
    order = _order(report, suspects)
    if not order:
        return None
    position = {c: i for i, c in enumerate(order)}
    ranked = sorted(suspects, key=position.__getitem__)
    first = position[ranked[0]]
    if report.search.mode == "posterior":
        # The posterior's statement is about positions: the culprit lies at one of the
        # suspects with `probability`; the commit before them bounds it, decided or not.
        good = order[first - 1] if first > 0 else report.good.commit
        bad = ranked[-1]
        probability = likely.probability if unsure and likely else report.search.confidence
    else:
        # git's possible culprits: the current bad end and the skipped commits. What
        # bounds them from below is the newest commit git was told is good.
        good = next(
            (c for c in reversed(order[:first]) if _verdict(report, c) == "good"),
            report.good.commit,
        )
        bad = next((c for c in ranked if _verdict(report, c) == "bad"), ranked[-1])
        probability = None
    between = [_between(report, c, subject) for c in ranked if c not in (good, bad)]
    return Conclusive(
        last_good=_bound(report, good, subject),
        first_bad=_bound(report, bad, subject),
        between=between,
        unmeasured=[b.commit for b in between if not b.runs],
        probability=None if probability is None else round(probability, 6),
    )


def _order(report: Report, suspects: list[str]) -> list[str]:
    """The range the search walked, oldest first, holding every suspect ([] if none)."""
    if not suspects:
        return []
    for order in (report.first_parent_range if report.first_parent else [], report.range):
        if order and set(suspects) <= set(order):
            return order
    return []


def _verdict(report: Report, commit: str) -> str:
    if commit == report.good.commit:
        return "good"
    if commit == report.bad.commit:
        return "bad"
    return report.verdicts.get(commit, "")


def _subject(report: Report, commit: str, subject: Callable[[str], str] | None) -> str:
    known = next((e.subject for e in report.evaluations if e.commit == commit), "")
    return known or (subject(commit) if subject is not None else "")


def _bound(report: Report, commit: str, subject: Callable[[str], str] | None) -> Bound:
    for end, verdict in ((report.good, "good"), (report.bad, "bad")):
        if commit == end.commit:
            return Bound(commit, end.subject, verdict, end.value, list(end.runs), "endpoint")
    runs = runs_of(report, commit)
    values = [e.value for e in runs if e.value is not None]
    # Runs stopped early read a part of the log: the value is the whole runs' when any.
    whole = [e.value for e in runs if e.value is not None and not e.stopped_early]
    value = float(statistics.median(whole or values)) if values else None
    verdict = _verdict(report, commit)
    return Bound(
        commit,
        _subject(report, commit, subject),
        verdict,
        value,
        values,
        _how(report, commit, verdict, measured=bool(values)),
    )


def _how(report: Report, commit: str, verdict: str, *, measured: bool) -> str:
    if not verdict:
        return ""
    mark = next((m for m in report.marks if m.commit == commit and m.verdict == verdict), None)
    if mark is not None:
        return "marked by hand" + (f": {_one_line(mark.note)}" if mark.note else "")
    if same := report.same_tree_verdicts.get(commit):
        return _one_line(same)
    return "measured" if measured else ""


def _between(report: Report, commit: str, subject: Callable[[str], str] | None) -> Between:
    runs = runs_of(report, commit)
    values = [e.value for e in runs if e.value is not None]
    return Between(
        commit, _subject(report, commit, subject), values, _why(report, commit, runs, values)
    )


def _why(report: Report, commit: str, runs: list[Evaluation], values: list[float]) -> str:
    """Why a commit between the bounds has no verdict of its own."""
    verdict = report.verdicts.get(commit, "")
    mark = _skip_mark(report, commit)
    if mark is not None and verdict == "skip":
        return "marked skip by hand" + (f": {_one_line(mark.note)}" if mark.note else "")
    if values:
        why = _one_line(report.verdict_reasons.get(commit, ""))
        return f"{verdict}: {why}" if verdict else "not decided"
    reasons = [_one_line(split_reason(e.reason).summary) for e in runs if e.value is None]
    said = list(dict.fromkeys(r for r in reasons if r))
    if said:
        return "; ".join(said)
    return _one_line(report.verdict_reasons.get(commit, "")) or NOT_MEASURED


def _skip_mark(report: Report, commit: str) -> Mark | None:
    return next((m for m in report.marks if m.commit == commit and m.verdict == "skip"), None)


def _one_line(text: str) -> str:
    """Free text (a mark's note, a reason) on one line: each form of the report says it
    inside a line, and report.md's action block is a fenced block a line of "```" ends."""
    return " ".join(text.split())


# -- what it says -----------------------------------------------------------------------


def bound_text(report: Report, bound: Bound) -> str:
    """`86346e056fbf (good, conflicts 26, measured)`."""
    metric = report.metric
    parts = [f"the {bound.verdict} endpoint" if bound.how == "endpoint" else bound.verdict]
    if bound.value is not None:
        runs = f", {len(bound.runs)} runs" if len(bound.runs) > 1 else ""
        parts.append(f"{metric} {_value(bound.value, metric)}{runs}")
    if bound.how and bound.how != "endpoint":
        parts.append(same_tree_plain(bound.how))
    elif not bound.verdict:
        parts.append("not decided" if bound.runs else "not measured")
    return f"{short(bound.commit)} ({', '.join(p for p in parts if p)})"


def lead(report: Report) -> tuple[str, str] | None:
    """(label, text): what the run established, for the first lines a person reads."""
    c = report.conclusive
    if c is None:
        return None
    search = report.search
    head = ""
    label = "Not one culprit"
    if report.status == "unsure":
        label = "Unsure"
        guess = ", ".join(short(x) for x in search.best_guess)
        head = (
            "the evaluation budget ran out before the search was sure (best guess "
            f"{guess or 'none'}, probability {search.confidence or 0:.3f}); "
        )
    chance = f"with probability {c.probability:.3f} " if c.probability is not None else ""
    text = (
        f"{head}{chance}the regression came in after {bound_text(report, c.last_good)} and at "
        f"or before {bound_text(report, c.first_bad)}"
    )
    count = len(c.between)
    if count:
        these = "the commit before it" if count == 1 else f"one of the {count} commits before it"
        # "Could not be measured" only of commits that were tried: an unsure search's
        # range holds commits it never got to.
        failed = [b for b in c.between if not b.runs and b.reason != NOT_MEASURED]
        why = (
            "which could not be measured"
            if len(failed) == count
            else "which the runs so far do not decide"
        )
        text += f": {short(c.first_bad.commit)} or {these}, {why}"
    return label, text


def between_text(report: Report, between: Between) -> str:
    """`9bbab875fb18 change 4: build: no simulator profile ...` (its runs when measured)."""
    runs = ""
    if between.runs:
        runs = f"{report.metric} {', '.join(_value(v, report.metric) for v in between.runs)}; "
    subject = f" {between.subject}" if between.subject else ""
    return f"{short(between.commit)}{subject}: {runs}{between.reason}"


def between_texts(report: Report) -> list[str]:
    """A line per commit between the bounds; a stretch of commits no run was made of (an
    unsure search's range) in one line: a run of them says nothing one by one."""
    c = report.conclusive
    if c is None:
        return []
    out: list[str] = []
    quiet: list[Between] = []

    def flush() -> None:
        if len(quiet) >= QUIET_STRETCH:
            first, last = short(quiet[0].commit), short(quiet[-1].commit)
            out.append(f"{first} .. {last}: {len(quiet)} commits, {NOT_MEASURED}")
        else:
            out.extend(between_text(report, b) for b in quiet)
        quiet.clear()

    for b in c.between:
        if not b.runs and b.reason == NOT_MEASURED:
            quiet.append(b)
            continue
        flush()
        out.append(between_text(report, b))
    flush()
    return out


def next_steps(report: Report) -> list[str]:
    """What a person does next to narrow it down: read the range, measure it again, mark
    a commit measured by hand, or search longer."""
    c = report.conclusive
    if c is None:
        return []
    good, bad = short(c.last_good.commit), short(c.first_bad.commit)
    walk = " --first-parent" if report.first_parent else ""
    paths = f" -- {' '.join(map(shlex.quote, report.paths))}" if report.paths else ""
    steps = [f"read the changes it could be: `git log{walk} --oneline {good}..{bad}{paths}`"]
    skipped = {e.commit for e in report.evaluations if e.value is None}
    # A commit marked by hand is not measured again by the same command: the mark wins.
    machine = [
        b.commit
        for b in c.between
        if not b.runs
        and not any(m.commit == b.commit for m in report.marks)
        and any(e.infra_skip for e in runs_of(report, b.commit) if e.value is None)
    ]
    if machine:
        them, their = ("it", "its") if len(machine) == 1 else ("them", "their")
        steps.append(
            f"run the same command again: it measures {_names(machine)} again (the machine "
            f"failed {them}, not {their} tree: such a skip is not final)"
        )
    # Skips of their tree (a build that fails) or by hand: a person can measure them.
    tree = [
        u
        for u in c.unmeasured
        if u not in machine and (u in skipped or report.verdicts.get(u) == "skip")
    ]
    run_dir = shlex.quote(report.run_dir)
    if tree:
        middle = tree[len(tree) // 2]
        steps.append(
            f"{_names(tree)} cannot be measured here: measure {short(middle)} yourself "
            f"(fix its build, or build it by hand), record what it measured with `bisector "
            f"mark {short(middle)} good --run-dir {run_dir}` (or bad), and run the same "
            "command again: it takes the mark"
        )
    if report.status == "unsure":
        made = sum(1 for e in report.evaluations if e.phase != "confirm")
        step = (
            f"search longer: the same command with --fresh and --max-evaluations above the {made} "
            "evaluations this run used (the values measured so far are reused from the measurement "
            "cache)"
        )
        # Each commit's latest mark, as the run takes them.
        marks = {m.commit: m.verdict for m in report.marks}
        if marks:
            # --fresh sets the journal aside (run dir/earlier/), and the marks are in it.
            again = "; ".join(
                f"`bisector mark {short(commit)} {verdict} --run-dir {run_dir}`"
                for commit, verdict in marks.items()
            )
            step += (
                f"; --fresh sets this run's journal aside with the marks in it: once the new "
                f"run has begun, mark again: {again}"
            )
        steps.append(step)
    return steps


def lead_lines(report: Report, *, limit: int | None = SUMMARY_BETWEEN) -> list[str]:
    """The plain-text lead: what was established, the commits between (at most `limit`),
    and what to do next."""
    said = lead(report)
    c = report.conclusive
    if said is None or c is None:
        return []
    label, text = said
    lines = [f"{label.lower()}: {text}" + (":" if c.between else "")]
    between = between_texts(report)
    shown = between if limit is None else between[:limit]
    lines += [f"  {line}" for line in shown]
    if len(shown) < len(between):
        lines.append(f"  ... {len(between) - len(shown)} lines more in report.md")
    lines += [f"next: {step}" for step in next_steps(report)]
    return lines


def _names(commits: list[str]) -> str:
    return ", ".join(short(c) for c in commits)
