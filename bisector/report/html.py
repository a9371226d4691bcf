"""report.html: one self-contained page (inline CSS and SVG) that reads well printed too."""

from __future__ import annotations

import re
from html import escape

from bisector.report.answer import Files, Para, Pre, Section, Table, action_section, answer_sections
from bisector.report.conclusive import between_texts, lead, next_steps
from bisector.report.costs import (
    MEASURED_HEADER,
    NO_ESTIMATE,
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
from bisector.report.plot import range_svg
from bisector.report.smoking_gun import SmokingGun, comparison, gun_svg
from bisector.report.timeline import OPTIONAL_COLUMNS, drop_empty_columns
from bisector.report.timeline import rows as timeline_rows

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;
 max-width:1180px;margin:1.5em auto;padding:0 1em}
h1{font-size:20px;margin:0 0 .3em}h2{font-size:17px;margin:1.6em 0 .5em;
 border-bottom:1px solid #ddd;padding-bottom:.2em}h3{font-size:15px;margin:1.2em 0 .4em}
code,pre,.sha{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
a{color:#0b57d0}.status{font-size:17px;font-weight:600;padding:.45em .8em;border-radius:6px;
 display:inline-block;margin:.2em 0 .6em}.ok{background:#e6f4ea;color:#1e4620}
.warn{background:#fff4e5;color:#663c00}.alarm{background:#fdecea;color:#611a15;
 border:2px solid #c62828;border-radius:6px;padding:.6em 1em;margin:.6em 0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.4em 0}
dl.kv dt{color:#555}dl.kv dd{margin:0}
table{border-collapse:collapse;width:100%;margin:.4em 0}
th,td{text-align:left;vertical-align:top;padding:3px 7px;border-bottom:1px solid #e3e3e3}
th{background:#f6f6f6;font-weight:600}td.num{text-align:right;white-space:nowrap}
tr.culprit td{background:#fdecea}tr.parent td{background:#eef7ee}
table.cost{width:auto;min-width:34em}table.cost th+th{text-align:right}
table.gun{width:auto;min-width:40em}table.gun th+th{text-align:right;padding-left:2.5em}
.nw{white-space:nowrap}
.good{color:#2e7d32;font-weight:600}.bad{color:#c62828;font-weight:600}
.skip{color:#616161;font-weight:600}.muted{color:#666}.small{font-size:12px}
pre.out{background:#f6f6f6;border-left:3px solid #9e9e9e;padding:.4em .7em;margin:.3em 0;
 white-space:pre-wrap;word-break:break-all}
figure{margin:.5em 0}figcaption{font-size:12px;color:#555}
ul.facts{margin:.3em 0;padding-left:1.2em}
p.why{background:#f3f6fb;border-left:3px solid #0b57d0;padding:.4em .8em;margin:.6em 0}
@media (max-width:760px){table{display:block;overflow-x:auto}dl.kv dd{overflow-wrap:anywhere}
 table.cost,table.gun{min-width:0}}
table.profile td{overflow-wrap:anywhere}table.profile td.num{overflow-wrap:normal}
pre.action{border-left-color:#0b57d0;word-break:normal;overflow-wrap:anywhere}
@media print{body{max-width:none;margin:0;font-size:11px}h2{break-after:avoid}
 figure,tr{break-inside:avoid}a{color:inherit;text-decoration:none}}
"""


def _a(text: str, url: str | None, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    inner = escape(text)
    return f'<a href="{escape(url)}"{attr}>{inner}</a>' if url else f"<span{attr}>{inner}</span>"


def _sha(report: Report, commit: str, full: bool = False) -> str:
    return _a(commit if full else short(commit), commit_url(report.remote, commit), "sha")


def _verdict(verdict: str) -> str:
    word = verdict.rsplit(": ", maxsplit=1)[-1]
    cls = word if word in ("good", "bad", "skip") else ""
    return f'<span class="{cls}">{escape(verdict)}</span>'


def _teardown(report: Report) -> str:
    if not report.teardown_failures:
        return ""
    items = "".join(
        f"<li><code>{escape(short(f.commit))}</code> ({escape(f.eval_dir)}): {escape(f.error)}</li>"
        for f in report.teardown_failures
    )
    cmd = escape(f"bisector cleanup --run-dir {report.run_dir}")
    return (
        '<div class="alarm"><strong>TEARDOWN FAILED: something may still be running (and '
        f"costing money).</strong><ul>{items}</ul>Clean up with <code>{cmd}</code>.</div>"
    )


def _culprit(report: Report) -> str:
    culprit = report.culprit
    if culprit is None:
        return _no_culprit(report)
    remote = report.remote
    rows = [
        ("commit", _sha(report, culprit.commit, full=True)),
        ("subject", f"<strong>{escape(culprit.subject)}</strong>"),
    ]
    if culprit.pr:
        rows.append(("pull request", _a(f"#{culprit.pr}", pr_url(remote, culprit.pr))))
    rows += [("author", escape(culprit.author)), ("date", escape(culprit.date))]
    for merge in culprit.merges:
        pr = f" (PR {_a(f'#{merge.pr}', pr_url(remote, merge.pr))})" if merge.pr else ""
        rows.append(
            ("came in with merge", f"{_sha(report, merge.commit)} {escape(merge.subject)}{pr}")
        )
    for role, commit in (("culprit", culprit.commit), ("its parent", culprit.parent.commit)):
        if built := built_with(report, commit):
            rows.append((f"{role} built with", f"{_sha(report, commit)} {escape(built)}"))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    why = f'<p class="why">{escape(why_culprit(report))}</p>'
    return f'<h2>Culprit</h2><dl class="kv">{body}</dl>{why}'


def _established(report: Report) -> str:
    """What a run without a culprit established, and what to do next."""
    said = lead(report)
    if said is None or report.conclusive is None:
        return ""
    label, text = said
    between = report.conclusive.between
    out = [
        "<h2>What the run established</h2>"
        f"<p><strong>{escape(label)}</strong>: {escape(text)}{':' if between else ''}</p>"
    ]
    if between:
        items = "".join(f"<li>{escape(line)}</li>" for line in between_texts(report))
        out.append(f"<ul>{items}</ul>")
    if steps := next_steps(report):
        items = "".join(f"<li>{_code_spans(escape(step))}</li>" for step in steps)
        out.append(f"<p><strong>Next</strong>:</p><ul>{items}</ul>")
    return "".join(out)


def _no_culprit(report: Report) -> str:
    if report.conclusive is not None:
        return _established(report)
    search = report.search
    if report.status == "unsure" and search.likely_range is not None:
        likely = search.likely_range
        guess = ", ".join(short(c) for c in search.best_guess)
        items = "".join(f"<li>{_sha(report, c, full=True)}</li>" for c in likely.commits[:50])
        more = (
            f"<li>... and {len(likely.commits) - 50} more</li>" if len(likely.commits) > 50 else ""
        )
        return (
            f"<h2>Where the culprit is</h2><p>Best guess {escape(guess)} with probability "
            f"{search.confidence or 0:.3f}. The culprit is one of these {len(likely.commits)} "
            f"commits with probability {likely.probability:.3f}:</p><ul>{items}{more}</ul>"
        )
    items = "".join(f"<li>{_sha(report, c, full=True)}</li>" for c in report.candidates)
    return (
        "<h2>Where the culprit is</h2><p>It could be any of these (commits between them "
        f"could not be measured):</p><ul>{items}</ul>"
    )


def _evidence(report: Report) -> str:
    role_class = {"culprit": "culprit", "parent of the culprit": "parent"}
    rows = "".join(
        f'<tr class="{role_class.get(r.role, "")}"><td>{escape(r.role)}</td>'
        f"<td>{_sha(report, r.commit)}</td><td>{escape(r.subject)}</td>"
        f'<td class="num"><strong>{escape(r.value)}</strong></td><td>{escape(r.runs)}</td>'
        f"<td>{_verdict(r.verdict)}</td></tr>"
        for r in evidence_rows(report)
    )
    facts = [
        f"threshold <strong>{escape(threshold_text(report))}</strong>: "
        f"{escape(threshold_how(report))}"
    ]
    if report.culprit is not None:
        ok = report.culprit.confirmed
        facts.append(
            "confirmed by measuring the culprit and its parent again: "
            + ('<span class="good">yes</span>' if ok else '<span class="bad">NO</span>')
        )
    facts += [f"confidence: {escape(confidence_text(report))}", escape(search_text(report))]
    if report.search.parallel > 1 and report.search.rounds:
        facts.append(
            "rounds: " + escape(", ".join(f"{k} {v}" for k, v in report.search.rounds.items()))
        )
    for mark in report.marks:
        note = f" ({escape(mark.note)})" if mark.note else ""
        facts.append(
            f"marked {_verdict(mark.verdict)} by hand: {_sha(report, mark.commit)}{note}; "
            f"{escape(mark_took(report, mark))}"
        )
    items = "".join(f"<li>{f}</li>" for f in facts)
    return (
        "<h2>Evidence</h2><table><tr><th></th><th>commit</th><th>subject</th>"
        f"<th>{escape(report.metric)}</th><th>every run (phase)</th><th>verdict</th></tr>"
        f'{rows}</table><ul class="facts">{items}</ul>{_skips(report)}'
    )


def _output(lines: list[str]) -> str:
    return f'<pre class="out">{escape(chr(10).join(lines))}</pre>' if lines else ""


def _skips(report: Report) -> str:
    found = skips(report)
    if not found:
        return f'<p class="muted">{escape(no_skips_text(report))}</p>'
    items = "".join(
        f"<li>#{s.n} <code>{escape(s.commit)}</code> {escape(s.subject)}: "
        f"{escape(s.reason.summary)}{escape(s.after)}{_output(s.reason.output)}</li>"
        for s in found
    )
    return f"<h3>Skipped ({len(found)})</h3><ul>{items}</ul>"


def _range_plot(report: Report) -> str:
    axis = (
        f"good (left) and the {len(report.first_parent_range) - 1} first-parent commits after "
        "it up to bad (right), as the search walked them; commits measured inside a merged "
        "branch are in the panel on the right, and their merge is shaded on the left"
        if report.first_parent and report.first_parent_range
        else f"all {len(report.range)} commits of good..bad, oldest left"
    )
    return (
        f"<h2>The metric along the range</h2><figure>{range_svg(report)}<figcaption>"
        f"x: {escape(axis)}. Labels: the ends, the culprit and the measured commits that fit "
        "(short sha; the first measured first). A commit measured more "
        "than once has its runs side by side, in order.</figcaption></figure>"
    )


def _gun(report: Report, gun: SmokingGun) -> str:
    parts = [f"<h2>Smoking gun</h2><p>{escape(gun.note[0].upper() + gun.note[1:])}.</p>"]
    if pruned := pruned_text(report):
        parts.append(f'<p class="muted">{escape(pruned[0].upper() + pruned[1:])}.</p>')
    svg = gun_svg(gun)
    if svg:
        parts.append(
            f"<figure>{svg}<figcaption>Counted from each run's apiserver log the way "
            f"<code>bisector score</code> counts; dotted lines mark the part of the log the "
            "verdict was read from when it is not the whole log.</figcaption></figure>"
        )
    if gun.sides:
        header, rows = comparison(gun)
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>"
            + f"<td>{escape(row[0])}</td>"
            + "".join(f'<td class="num">{escape(c)}</td>' for c in row[1:])
            + "</tr>"
            for row in rows
        )
        parts.append(f'<table class="gun"><tr>{head}</tr>{body}</table>')
    return "".join(parts)


def _code_spans(text: str) -> str:
    """`command` in an (escaped) note, as Markdown shows it: code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _cost(report: Report) -> str:
    if report.cost is None:
        return ""
    body = "".join(
        f"<tr><td>{escape(r.label)}</td>"
        f'<td class="num{" muted" if r.model == NO_ESTIMATE else ""}">{escape(r.model)}</td>'
        f'<td class="num"><strong>{escape(r.measured)}</strong></td></tr>'
        for r in cost_rows(report.cost)
    )
    said = cost_notes(report.cost, report.backend)
    if report.eta is not None:
        said.append(eta_text(report.eta))
    notes = "".join(f"<li>{_code_spans(escape(n))}</li>" for n in said)
    return (
        "<h2>Cost: the model's expectation and what the run used</h2>"
        f'<table class="cost"><tr><th></th><th>{escape(model_header(report.cost))}</th>'
        f"<th>{escape(MEASURED_HEADER)}</th></tr>{body}</table>"
        f'<ul class="facts small">{notes}</ul>'
    )


def _timeline(report: Report) -> str:
    rows: list[list[str]] = []
    culprit = report.culprit.commit if report.culprit else ""
    for r in timeline_rows(report):
        # The apiserver log the value was read from first, then each command's output.
        logs = " ".join(
            f'<a class="nw" href="{escape(path)}">{escape(path.rsplit("/", 1)[-1])}</a>'
            for path in [*r.logs, *r.command_logs]
        )
        notes = "".join(f"<div>{escape(n)}</div>" for n in r.notes)
        if r.reason.summary:
            notes += f"<div>skipped: {escape(r.reason.summary)}</div>{_output(r.reason.output)}"
        cls = "culprit" if culprit.startswith(r.commit) else ""
        rows.append(
            [
                cls,
                f"<td>{r.n}</td>",
                f"<td>{escape(r.started)}</td>",
                f"<td>{escape(r.phase)}</td>",
                f'<td>{_sha(report, r.commit)}<div class="small muted">'
                f"{escape(r.subject)}</div></td>",
                f"<td>{_verdict(r.verdict)}</td>",
                f'<td class="num">{escape(r.value)}</td>',
                f'<td class="num">{escape(r.duration)}</td>',
                f"<td>{escape(r.why)}</td>",
                f'<td class="small">{_window(r.window)}</td>' if r.window else " ",
                f'<td class="small">{notes}</td>' if notes else " ",
                f"<td>{logs}</td>" if logs else " ",
            ]
        )
    header = ["", "#", "started (UTC)", "phase", "commit", "verdict", "value", "took"]
    header += ["why there", "log window", "notes", "logs"]
    header, rows = drop_empty_columns(header, rows, OPTIONAL_COLUMNS)
    head = "".join(f"<th>{escape(h)}</th>" for h in header[1:])
    body = "".join(
        f'<tr class="{row[0]}">'
        + "".join(c if c.strip() else "<td></td>" for c in row[1:])
        + "</tr>"
        for row in rows
    )
    return f"<h2>Timeline of the search</h2><table><tr>{head}</tr>{body}</table>"


def _window(text: str) -> str:
    """`2m00s from 06-02 05:51:00` with the date and time kept on one line (it wrapped
    as `06-` / `02`)."""
    span, sep, start = text.partition(" from ")
    if not sep:
        return escape(text)
    return f'{escape(span)} from <span class="nw">{escape(start)}</span>'


def _details(report: Report) -> str:
    kind = "first-parent commits" if report.first_parent else "commits"
    rows = [
        ("backend", report.backend),
        ("metric", f"{report.metric} (higher is worse), {report.repeats} run(s) per commit"),
        ("range", f"{report.range_size} {kind} ({len(report.range)} in all)"),
        ("paths", ", ".join(report.paths) or "all"),
        ("run directory", report.run_dir),
        ("config fingerprint", report.config_fingerprint),
    ]
    body = "".join(f"<dt>{k}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    log = (
        f'<h3><code>git bisect log</code></h3><pre class="out">{escape(report.bisect_log)}</pre>'
        if report.bisect_log.strip()
        else ""
    )
    return f'<h2>Run</h2><dl class="kv">{body}</dl>{log}'


def _adaptations(report: Report) -> str:
    """What the backend added to the candidates' scripts and builds (report.json's
    `adaptations`), each with its commands."""
    if not report.adaptations:
        return ""
    items = "".join(
        f"<li><strong>{escape(a.name)}</strong>: {escape(a.why)}"
        + "".join(f"<br><code>{escape(c)}</code>" for c in a.commands)
        + "</li>"
        for a in report.adaptations
    )
    return (
        f"<h2>What the {escape(report.backend)} backend added to the scripts and builds</h2>"
        f'<ul class="facts small">{items}</ul>'
    )


def _sections(sections: list[Section | None]) -> str:
    """The answer's blocks (bisector.report.answer) in HTML."""
    out = []
    for section in (s for s in sections if s is not None):
        if section.title:
            out.append(f"<h{section.level}>{escape(section.title)}</h{section.level}>")
        for block in section.blocks:
            if isinstance(block, Para):
                label = f"<strong>{escape(block.label)}</strong>: " if block.label else ""
                cls = ' class="alarm"' if block.alarm else ""
                out.append(f"<p{cls}>{label}{escape(block.text)}</p>")
            elif isinstance(block, Table):
                head = "".join(f"<th>{escape(h)}</th>" for h in block.header)
                rows = "".join(
                    ('<tr class="culprit">' if marked else "<tr>")
                    + f'<td class="num">{escape(row[0])}</td><td class="num">{escape(row[1])}</td>'
                    f"<td><code>{escape(row[2])}</code></td>"
                    f'<td class="small">{escape(row[3])}</td></tr>'
                    for row, marked in zip(block.rows, block.marked, strict=True)
                )
                out.append(
                    f'<p class="small muted">{escape(block.caption)}</p>'
                    f'<table class="profile"><tr>{head}</tr>{rows}</table>'
                )
            elif isinstance(block, Pre):
                out.append(f'<pre class="out action">{escape(block.text)}</pre>')
            elif isinstance(block, Files):
                links = ", ".join(_a(name, path) for name, path in block.links)
                out.append(f'<p class="small">{escape(block.label)}: {links}</p>')
    return "".join(out)


def render_html(report: Report, gun: SmokingGun) -> str:
    state = "ok" if report.confirmed else "warn"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>bisector report: {escape(headline(report))}</title>"
        f"<style>{CSS}</style></head><body>"
        f'<h1>bisector report</h1>{_teardown(report)}<div class="status {state}">'
        f"{escape(headline(report))}</div>"
        f"{_culprit(report)}{_sections([*answer_sections(report)])}"
        f"{_evidence(report)}{_range_plot(report)}{_gun(report, gun)}"
        f"{_cost(report)}{_timeline(report)}{_adaptations(report)}{_details(report)}"
        f"{_sections([action_section(report)])}</body></html>\n"
    )
