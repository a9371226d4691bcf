"""Descent into the culprit merge, written once and recursive.

A search over a chain (the first-parent line, or a merged branch's own first-parent
line) that names a merge has found the PR, not the commit: the merge's branch is
searched next, with the same search. A culprit that is itself a merge inside that
branch is descended into in turn; the merge a range was made for stands as the
culprit when its branch is good (a bad merge of good parents).
"""

from __future__ import annotations

from bisector.gitrepo import GitRepo
from bisector.search.base import Found, Inside, Search, SearchRange
from bisector.search.progress import Progress


def descend(
    search: Search,
    repo: GitRepo,
    found: Found,
    within: SearchRange,
    *,
    progress: Progress,
    confidence: float,
) -> tuple[Found, list[str]]:
    """The innermost culprit and the merges descended into, outermost first."""
    merges: list[str] = []
    while (
        found.culprit is not None
        and within.chain
        and found.culprit != within.merge
        and repo.info(found.culprit).is_merge
    ):
        merge = found.culprit
        merges.append(merge)
        progress.note(f"{merge[:12]} is a merge: bisecting the merged branch")
        within = search.descent_range(merge)
        inner = search.find(within)
        if found.confidence is not None and inner.confidence is not None:
            # Both searches must be right: the culprit's probability is the product.
            inner.confidence *= found.confidence
            inner.sure = inner.sure and inner.confidence >= confidence ** (len(merges) + 1)
            if not inner.sure:
                inner.culprit = None
        inside = _inside(inner, within, search.verdicts)
        if inside is not None:
            # The PR is the culprit: its branch is bad and nothing narrower can be said.
            inner = Found(merge, [], inner.confidence, True, inside=inside)
        found = inner
    return found, merges


def _inside(found: Found, within: SearchRange, verdicts: dict[str, str]) -> Inside | None:
    """Where in the branch `within` the first bad commit lies, when the search ended
    with only unmeasured commits between a good and a bad one; None otherwise."""
    if found.culprit is not None or not found.sure or not found.candidates:
        return None
    order = {c: i for i, c in enumerate(within.commits)}
    candidates = sorted(found.candidates, key=lambda c: order.get(c, len(order)))
    unmeasured = [c for c in candidates if verdicts.get(c) == "skip"]
    if not unmeasured:
        return None
    bad = next((c for c in reversed(candidates) if verdicts.get(c) == "bad"), within.bad)
    # Everything older than the first unmeasured commit is good (measured, or an
    # ancestor of a good one): the commit just before it is the good side.
    first = order.get(unmeasured[0])
    good = within.commits[first - 1] if first else within.good
    return Inside(good, bad, [c for c in unmeasured if c != bad])


def merge_path(repo: GitRepo, outer: str, culprit: str) -> list[str]:
    """The merges that brought `culprit` into `outer`'s branch, outermost first.

    The plain search bisects a merged branch as a whole DAG, so it lands on the commit
    without walking through the merges inside the branch; this names them, so the
    report says which PR brought the commit in, whichever search found it.
    """
    path = [outer]
    merge = outer
    while True:
        parents = repo.info(merge).parents
        if len(parents) < 2:
            return path
        line = repo.rev_list(parents[0], parents[1], first_parent=True)
        if culprit in line:
            return path
        inner = next(
            (c for c in line if repo.info(c).is_merge and repo.is_ancestor(culprit, c)), None
        )
        if inner is None or inner in path:
            return path
        path.append(inner)
        merge = inner
