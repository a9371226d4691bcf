"""report.md: the same content as report.html, as Markdown a terminal shows well (no HTML)."""

from __future__ import annotations

from bisector.report.answer import Files, Para, Pre, Section, Table, action_section, answer_sections
from bisector.report.conclusive import between_texts, lead, next_steps
from bisector.report.costs import (
    MEASURED_HEADER,
    cost_notes,
    cost_rows,
    eta_text,
    model_header,
)
from bisector.report.evidence import built_with, evidence_rows, skips
from bisector.report.facts import (
    confidence_text,
    headline,
    mark_took,
    no_skips_text,
    pruned_text,
    search_text,
    short,
    threshold_how,
    threshold_text,
    why_culprit,
)
from bisector.report.links import commit_url, pr_url
from bisector.report.model import Report
from bisector.report.smoking_gun import SmokingGun, comparison
from bisector.report.timeline import OPTIONAL_COLUMNS, drop_empty_columns
from bisector.report.timeline import rows as timeline_rows

# `<` would open HTML or an autolink; `|` ends a table cell; `*` starts emphasis.
_ESCAPES = str.maketrans({"|": "\\|", "<": "\\<", "*": "\\*", "\n": " "})


def esc(text: str) -> str:
    """Free text (subjects, authors, reasons) that Markdown must not read as markup."""
    return text.translate(_ESCAPES)


def code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text.replace(chr(10), ' ')}{pad}{fence}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return lines


def _link(text: str, url: str | None) -> str:
    return f"[{text}]({url})" if url else text


def _teardown(report: Report) -> list[str]:
    if not report.teardown_failures:
        return []
    lines = ["## TEARDOWN FAILED: something may still be running", ""]
    for f in report.teardown_failures:
        lines.append(f"- {code(short(f.commit))} ({esc(f.eval_dir)}): {esc(f.error)}")
    lines += ["", f"Clean up with {code('bisector cleanup --run-dir ' + report.run_dir)}.", ""]
    return lines


def _adaptations(report: Report) -> list[str]:
    if not report.adaptations:
        return []
    lines = [f"## What the {report.backend} backend added to the scripts and builds", ""]
    for a in report.adaptations:
        lines.append(f"- **{esc(a.name)}**: {esc(a.why)}")
        lines += [f"  - {code(c)}" for c in a.commands]
    return [*lines, ""]


def _culprit(report: Report) -> list[str]:
    culprit = report.culprit
    if culprit is None:
        return _no_culprit(report)
    remote = report.remote
    lines = [
        "## Culprit",
        "",
        f"- commit: {_link(code(culprit.commit), commit_url(remote, culprit.commit))} "
        f"{esc(culprit.subject)}",
    ]
    if culprit.pr:
        lines.append(f"- pull request: {_link(f'#{culprit.pr}', pr_url(remote, culprit.pr))}")
    lines.append(f"- author: {esc(culprit.author)}, {esc(culprit.date)}")
    for merge in culprit.merges:
        pr = f" (PR {_link(f'#{merge.pr}', pr_url(remote, merge.pr))})" if merge.pr else ""
        sha = _link(code(short(merge.commit)), commit_url(remote, merge.commit))
        lines.append(f"- came in with merge {sha} {esc(merge.subject)}{pr}")
    for role, commit in (("culprit", culprit.commit), ("its parent", culprit.parent.commit)):
        if built := built_with(report, commit):
            lines.append(f"- {role} {code(short(commit))} built with: {esc(built)}")
    return [*lines, "", why_culprit(report), ""]


def _established(report: Report) -> list[str]:
    """What a run without a culprit established, and what to do next."""
    said = lead(report)
    if said is None or report.conclusive is None:
        return []
    label, text = said
    between = report.conclusive.between
    lines = [f"**{label}**: {esc(text)}" + (":" if between else ""), ""]
    if between:
        lines += [*(f"- {esc(line)}" for line in between_texts(report)), ""]
    steps = next_steps(report)
    if steps:
        lines += ["**Next**:", "", *(f"- {esc(step)}" for step in steps), ""]
    return lines


def _no_culprit(report: Report) -> list[str]:
    if report.conclusive is not None:
        return _established(report)
    search = report.search
    if report.status == "unsure" and search.likely_range is not None:
        likely = search.likely_range
        guess = ", ".join(short(c) for c in search.best_guess)
        lines = [
            "**Unsure**: the evaluation budget ran out before the search was sure "
            f"(best guess {guess} with probability {search.confidence or 0:.3f}).",
            "",
            f"The culprit is one of these {len(likely.commits)} commits with probability "
            f"{likely.probability:.3f}:",
            "",
        ]
        lines += [f"- {code(c)}" for c in likely.commits[:50]]
        if len(likely.commits) > 50:
            lines.append(f"- ... and {len(likely.commits) - 50} more")
        return [*lines, ""]
    lines = [
        "**No single culprit**: it could be any of these (commits between them could not "
        "be measured):",
        "",
    ]
    lines += [f"- {code(c)}" for c in report.candidates]
    return [*lines, ""]


def _evidence(report: Report) -> list[str]:
    remote = report.remote
    rows = [
        [
            r.role,
            _link(code(short(r.commit)), commit_url(remote, r.commit)),
            esc(r.subject),
            r.value,
            r.runs,
            r.verdict,
        ]
        for r in evidence_rows(report)
    ]
    lines = [
        "## Evidence",
        "",
        *table(["", "commit", "subject", report.metric, "every run", "verdict"], rows),
        "",
        f"- threshold: {threshold_text(report)}, {esc(threshold_how(report))}",
    ]
    if report.culprit is not None:
        lines.append(
            "- confirmed by measuring the culprit and its parent again: "
            + ("yes" if report.culprit.confirmed else "NO")
        )
    lines += [
        f"- confidence: {confidence_text(report)}",
        f"- search: {search_text(report)}",
    ]
    if report.search.parallel > 1 and report.search.rounds:
        rounds = ", ".join(f"{k} {v}" for k, v in report.search.rounds.items())
        lines.append(f"- rounds: {rounds}")
    for mark in report.marks:
        note = f" ({esc(mark.note)})" if mark.note else ""
        lines.append(
            f"- marked {mark.verdict} by hand: {code(short(mark.commit))}{note}; "
            f"{mark_took(report, mark)}"
        )
    return [*lines, "", *_skips(report)]


def _skips(report: Report) -> list[str]:
    found = skips(report)
    if not found:
        return [no_skips_text(report), ""]
    lines = [f"### Skipped ({len(found)})", ""]
    for s in found:
        lines.append(
            f"- #{s.n} {code(s.commit)} {esc(s.subject)}: {esc(s.reason.summary)}{esc(s.after)}"
        )
        if s.reason.output:
            lines += ["", "  ```", *(f"  {line}" for line in s.reason.output), "  ```"]
    return [*lines, ""]


def _gun(report: Report, gun: SmokingGun) -> list[str]:
    lines = ["## Smoking gun", "", f"{gun.note[0].upper()}{gun.note[1:]}.", ""]
    if pruned := pruned_text(report):
        lines += [f"{pruned[0].upper()}{pruned[1:]}.", ""]
    if gun.sides:
        header, rows = comparison(gun)
        lines += [*table(header, rows), "", "The same over the run's time: see report.html.", ""]
    return lines


def _cost(report: Report) -> list[str]:
    if report.cost is None:
        return []
    rows = [[r.label, r.model, r.measured] for r in cost_rows(report.cost)]
    notes = [f"- {esc(note)}" for note in cost_notes(report.cost, report.backend)]
    if report.eta is not None:
        notes.append(f"- {esc(eta_text(report.eta))}")
    return [
        "## Cost: the model's expectation and what the run used",
        "",
        *table(["", model_header(report.cost), MEASURED_HEADER], rows),
        "",
        *notes,
        "",
    ]


def _timeline(report: Report) -> list[str]:
    rows = []
    for r in timeline_rows(report):
        notes = "; ".join(r.notes)
        if r.reason.summary:
            notes = "; ".join(x for x in (notes, "skip: " + r.reason.summary) if x)
        rows.append(
            [
                str(r.n),
                r.started,
                r.phase,
                code(r.commit),
                r.verdict,
                r.value,
                r.duration,
                esc(r.why),
                r.window,
                esc(notes),
                " ".join(
                    f"[{name.rsplit('/', 1)[-1]}]({name})" for name in [*r.logs, *r.command_logs]
                ),
            ]
        )
    header = ["#", "started", "phase", "commit", "verdict", "value", "took", "why there"]
    header += ["log window", "notes", "logs"]
    header, rows = drop_empty_columns(header, rows, OPTIONAL_COLUMNS)
    return ["## Timeline", "", *table(header, rows), ""]


def _details(report: Report) -> list[str]:
    lines = [
        "## Run",
        "",
        f"- backend: {report.backend}; metric: {report.metric}; repeats: {report.repeats}",
        f"- range: {report.range_size} "
        + ("first-parent commits" if report.first_parent else "commits")
        + f" ({len(report.range)} in all); paths: {', '.join(report.paths) or 'all'}",
        f"- run directory: {code(report.run_dir)}; config fingerprint {report.config_fingerprint}",
    ]
    if report.bisect_log.strip():
        lines += ["", "`git bisect log`:", "", "```", report.bisect_log.rstrip(), "```"]
    return [*lines, ""]


def _sections(sections: list[Section | None]) -> list[str]:
    """The answer's blocks (bisector.report.answer) in Markdown."""
    lines: list[str] = []
    for section in (s for s in sections if s is not None):
        if section.title:
            lines += ["#" * section.level + " " + esc(section.title), ""]
        for block in section.blocks:
            if isinstance(block, Para):
                label = f"**{esc(block.label)}**: " if block.label else ""
                lines += [f"{label}{esc(block.text)}", ""]
            elif isinstance(block, Table):
                rows = [
                    [*(code(c) if i == 2 else esc(c) for i, c in enumerate(row))]
                    for row in block.rows
                ]
                lines += [esc(block.caption) + ":", "", *table(block.header, rows), ""]
            elif isinstance(block, Pre):
                lines += ["```", block.text, "```", ""]
            elif isinstance(block, Files):
                links = ", ".join(f"[{esc(name)}]({path})" for name, path in block.links)
                lines += [f"{esc(block.label)}: {links}", ""]
    return lines


def render_markdown(report: Report, gun: SmokingGun) -> str:
    lines = [
        "# bisector report",
        "",
        *_teardown(report),
        *([f"**{headline(report)}**", ""] if report.culprit is not None else []),
        *_culprit(report),
        *_sections([*answer_sections(report)]),
        *_evidence(report),
        *_gun(report, gun),
        *_cost(report),
        *_timeline(report),
        *_adaptations(report),
        *_details(report),
        *_sections([action_section(report)]),
    ]
    return "\n".join(lines).rstrip() + "\n"
