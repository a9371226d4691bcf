"""Plain-English forms of terse reasons the measuring layer records, for the report."""

from __future__ import annotations

import re

_SAME_TREE = re.compile(r"same tree as (?P<commits>.+?), measured there: (?P<values>.+)")


def same_tree_plain(reason: str, subject: str = "it") -> str:
    """`same tree as 45a9d215875d, measured there: 3,927` (bisector.measure.evaluator) as
    `the search judged it by 45a9d215875d, which has the same source tree and measured
    3,927`; any other reason unchanged."""
    match = _SAME_TREE.fullmatch(reason)
    if match is None:
        return reason
    commits = match["commits"]
    several = "," in commits
    has = "have" if several else "has"
    by = "commits" if several else "commit"
    return (
        f"the search judged {subject} by {by} {commits}, which {has} the same source tree and "
        f"measured {match['values']}"
    )


def counted_whole_plain(count: int) -> str:
    """Why some evaluations' cluster time includes their build."""
    if count == 1:
        return "1 evaluation has no launch log, so its build is counted in its cluster time"
    return (
        f"{count} evaluations have no launch log, so their builds are counted in their cluster time"
    )
