"""The answer a maintainer acts on, for report.md and report.html alike: each culprit's
revert check, its share of the regression, what grew in its profiles against its
parent's, and the action block (bisector.report.action) to paste into an issue.

Built once as plain blocks (paragraphs, tables, preformatted text, file links) that
each renderer writes in its own markup, so the two reports cannot say different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bisector.pprof import amount
from bisector.report.culprits import hunt_text, inside_text, revert_text, share_text
from bisector.report.facts import short
from bisector.report.model import Culprit, ProfileDiff, ProfileRow, Report

PROFILE_HEADER = ["own", "with callees", "function", "file"]
# The mark of a function in a file the culprit changed.
IN_CULPRIT = "in the culprit's change"


@dataclass(frozen=True)
class Para:
    label: str  # said first, in bold ("" for none)
    text: str
    alarm: bool = False  # a finding that goes against the culprit being the whole answer


@dataclass(frozen=True)
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]
    marked: list[bool]  # rows to highlight: functions in files the culprit changed


@dataclass(frozen=True)
class Pre:
    text: str


@dataclass(frozen=True)
class Files:
    label: str
    links: list[tuple[str, str]]  # (what it is, its path: relative to the run directory)


Block = Para | Table | Pre | Files


@dataclass(frozen=True)
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2  # 2: a section of the report; 3: one culprit's part of it


def answer_sections(report: Report) -> list[Section]:
    """The culprits' sections (none without a culprit)."""
    if not report.culprits:
        return []
    several = len(report.culprits) > 1
    head = "Culprits: revert check, share, profiles" if several else "Revert check and profiles"
    sections = [Section(head, _overview(report))]
    for culprit in report.culprits:
        title = f"Culprit {culprit.hunt}: {short(culprit.commit)} {culprit.subject}"
        blocks = _culprit_blocks(report, culprit)
        sections.append(Section(title, blocks, level=3) if several else Section("", blocks, 3))
    return sections


def action_section(report: Report) -> Section | None:
    """What to do: the block a person pastes into the issue."""
    if not report.action:
        return None
    return Section("What to do", [Pre("\n".join(report.action))])


def _overview(report: Report) -> list[Block]:
    blocks: list[Block] = []
    if report.unexplained:
        blocks.append(Para("Not all explained", report.unexplained, alarm=True))
    if not report.revert_check:
        blocks.append(Para("Revert check", "off ([run] revert_check = false)"))
    return blocks


def _culprit_blocks(report: Report, culprit: Culprit) -> list[Block]:
    blocks: list[Block] = []
    if found := hunt_text(culprit):
        blocks.append(Para("Found", found))
    if where := inside_text(culprit):
        blocks.append(Para("Inside the PR", where))
    if culprit.revert is not None:
        restores = culprit.revert.outcome == "restores"
        alarm = culprit.revert.outcome == "does not restore"
        label = "Revert check" + (" (restores)" if restores else "")
        blocks.append(Para(label, revert_text(report, culprit.revert), alarm=alarm))
    if share := share_text(report, culprit):
        blocks.append(Para("Share of the regression", share))
    for diff in culprit.profiles:
        blocks += _profile_blocks(report, culprit, diff)
    if not culprit.profiles and culprit.confirmed:
        blocks.append(
            Para(
                "Profiles",
                "none taken (the backend leaves no *.pprof beside the confirmation runs: "
                "procs takes them; a local or gce collect step may leave its own)",
            )
        )
    return blocks


def _profile_blocks(report: Report, culprit: Culprit, diff: ProfileDiff) -> list[Block]:
    what = f"{diff.kind} profile: {short(culprit.commit)} against its parent " + short(
        culprit.parent.commit
    )
    if diff.error:
        return [Para(f"{diff.kind.capitalize()} profile diff", f"not made: {diff.error}")]
    grew = (
        "what grew most (own time or memory), then the functions in files the culprit "
        "changed that grew most counting their callees"
    )
    caption = f"{what}: {grew}" + (f"; pprof: {diff.total}" if diff.total else "")
    rows = [profile_row(r) for r in diff.rows]
    links = [
        ("the diff (go tool pprof -top)", diff.text),
        ("culprit's profile", diff.culprit),
        ("parent's profile", diff.parent),
    ]
    files = Files("Files", [(name, _relative(report, path)) for name, path in links if path])
    if not rows:
        return [Para(f"{diff.kind.capitalize()} profile diff", "nothing grew"), files]
    return [Table(caption, PROFILE_HEADER, rows, [r.in_culprit for r in diff.rows]), files]


def profile_row(row: ProfileRow) -> list[str]:
    """A row as the report shows it: pprof's amounts signed, the file as the import path."""
    file = short_file(row.file) + (f" ({IN_CULPRIT})" if row.in_culprit else "")
    return [_shown(row.flat), _shown(row.cum), short_function(row.function), file]


def profile_line(diff: ProfileDiff, count: int = 3) -> str:
    """One line of a diff for the action block: the top functions, and the culprit's."""
    if diff.error or not diff.rows:
        return diff.error or "nothing grew"
    top = [r for r in diff.rows if not r.in_culprit][:count] or diff.rows[:count]
    said = ", ".join(f"{short_function(r.function)} {_shown(r.flat)}" for r in top)
    mine = [r for r in diff.rows if r.in_culprit][:count]
    if mine:
        said += "; in its files: " + ", ".join(
            f"{short_function(r.function)} {_shown(r.cum)}" for r in mine
        )
    return said


def short_function(name: str) -> str:
    """A function by its package's import path: a vendored one's without the vendoring
    tree (`k8s.io/kubernetes/vendor/k8s.io/apiserver/...` is `k8s.io/apiserver/...`)."""
    return name.rsplit("/vendor/", 1)[-1]


def short_file(path: str) -> str:
    """A profile's file by its import path (after the last `/src/`, a vendored one's
    after `/vendor/`), as a reader finds it."""
    return path.rsplit("/src/", 1)[-1].rsplit("/vendor/", 1)[-1] if path else ""


def _shown(text: str) -> str:
    """pprof's amount, signed; bytes in kB, MB or GB with one decimal (pprof prints
    `401709.77kB` and `409253552B`)."""
    if text.endswith("B") and (value := amount(text)):
        size = abs(value)
        unit, scale = next(
            ((u, f) for u, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)) if size >= f), ("B", 1.0)
        )
        text = f"{value / scale:.1f}{unit}" if scale > 1 else f"{value:.0f}B"
    return text if text.startswith("-") or text in ("0", "") else f"+{text}"


def _relative(report: Report, path: str) -> str:
    """A path inside the run directory relative to it (the reports lie there)."""
    root = report.run_dir.rstrip("/") + "/"
    return path[len(root) :] if report.run_dir and path.startswith(root) else path
