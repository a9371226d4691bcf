"""Comments say why, never when: no machine path, issue number or date of a run in the
package's comments and docstrings. That history belongs in commit messages and docs/
(docs/procs.md says where and when a figure the code keeps was measured).

Facts about the world stay (a source version's date, a service's shutdown): the few that
look like narration are in ALLOWED, each with its why. A timestamp shown as an example of
a format uses a date no run of this project had (2017, as the logs it reads).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bisector"

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_YEAR = r"202[5-9]"  # the years this project's runs happen in
NARRATION = {
    "a date": re.compile(
        rf"(?<!\d){_YEAR}-\d\d-\d\d(?!\d)"  # 2026-12-04, 2026-12-04T22:56:34Z, run_2026-12-04
        rf"|\b\d{{1,2}} {_MONTH},? {_YEAR}\b"  # 4 December 2026, 1 Dec 2026
        rf"|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? {_YEAR}\b"  # December 4, 2026
        rf"|\b\d{{1,2}}/\d{{1,2}}/{_YEAR}\b",  # 12/4/2026
        re.IGNORECASE,
    ),
    # One machine's directories: a person's home, the work tree, a scratch dir they made.
    "a machine path": re.compile(r"(?:/work|/home|/Users|/root|/tmp)/[\w.-]+"),
    # This project's issues ("(issue 30, item 3)"); upstream ones are cited as
    # `kubernetes #46851` or `owner/repo#N`, which this does not match.
    "an issue number": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
}

# (file under bisector/, the text matched, why it is a fact about the world, not narration)
ALLOWED: tuple[tuple[str, str, str], ...] = (
    (
        "backends/gce/adapt.py",
        "2025-03-18",
        "the day Container Registry stopped taking pushes: why gcr.io hosts are rewritten",
    ),
    (
        "twin/gcloud.py",
        "2025-03-18",
        "the same shutdown, which the twin's docker push models",
    ),
    (
        "twin/master.py",
        "/home/kubernetes",
        "the directory kubemark's scripts use on the master VM (start-kubemark.sh)",
    ),
)


def _python_notes(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every bare string statement (docstrings)."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def _c_notes(source: str) -> Iterator[tuple[int, str]]:
    for match in _C_COMMENT.finditer(source):
        first = source.count("\n", 0, match.start()) + 1
        for offset, line in enumerate(match.group().splitlines()):
            yield first + offset, line


def narrations(source: str, *, c: bool = False) -> list[tuple[int, str, str]]:
    """(line, kind, text matched) of every narration in the comments and docstrings."""
    found = []
    for line, text in _c_notes(source) if c else _python_notes(source):
        for kind, pattern in NARRATION.items():
            found += [(line, kind, m.group()) for m in pattern.finditer(text)]
    return sorted(found)


def _package_narrations() -> list[tuple[str, int, str, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.c")):
        name = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        for line, kind, text in narrations(source, c=path.suffix == ".c"):
            found.append((name, line, kind, text))
    return found


def _allowed(name: str, text: str) -> bool:
    return any(name == where and text.startswith(what) for where, what, _ in ALLOWED)


def test_no_comment_or_docstring_in_the_package_narrates_a_run() -> None:
    bad = [
        f"bisector/{name}:{line}: {kind} ({text!r})"
        for name, line, kind, text in _package_narrations()
        if not _allowed(name, text)
    ]
    assert not bad, (
        "comments say why, never when: move the date, run, path or issue to the commit "
        "message or docs/ (keep a measured figure and its why):\n" + "\n".join(bad)
    )


def test_every_allowed_fact_is_still_there() -> None:
    found = {(name, text) for name, _, _, text in _package_narrations()}
    stale = [
        (where, what)
        for where, what, _ in ALLOWED
        if not any(name == where and text.startswith(what) for name, text in found)
    ]
    assert not stale, f"allow-list entries nothing matches any more, remove them: {stale}"


def test_narrations_are_found_in_comments_and_docstrings_only() -> None:
    source = '''"""Fitted on the real apiserver logs (1 Dec 2026)."""
import os

DIR = "/tmp/scratch"  # a value, not a comment: allowed


def f() -> None:
    """Before issue 27 the step had another name."""
    # as read in /work/modern/NOTES.md, the hunt of 4 December 2026
    x = 1
    """measured 2026-12-04T22:56Z, (issue 30, item 3), see /home/alice/notes"""


# kubernetes #46851 and owner/repo#448 are upstream; kubernetes 7043372, 31 May 2017
# Container Registry takes no pushes since 2025-03-18
'''
    assert narrations(source) == [
        (1, "a date", "1 Dec 2026"),
        (8, "an issue number", "issue 27"),
        (9, "a date", "4 December 2026"),
        (9, "a machine path", "/work/modern"),
        (11, "a date", "2026-12-04"),
        (11, "a machine path", "/home/alice"),
        (11, "an issue number", "issue 30"),
        (15, "a date", "2025-03-18"),
    ]
    c_source = "int x; /* measured on\n   December 4, 2026 */\n// see /tmp/run1/log\n"
    assert narrations(c_source, c=True) == [
        (2, "a date", "December 4, 2026"),
        (3, "a machine path", "/tmp/run1"),
    ]
