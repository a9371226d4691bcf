"""Which commits a search may ask for next: the builds worth prefetching.

While a round's clusters warm up, their verdicts are unknown; each possible
outcome leaves a different part of the range, and the search's next picks split
that part. With one slot: the midpoints of the older and the newer half (one of
them is the next candidate, whatever the verdict). With K slots: the K picks of
each of the K + 1 parts the round leaves. A guess costs a build, never a verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def split_points(part: Sequence[str], k: int) -> list[str]:
    """The k commits splitting `part` (oldest first) into k + 1 pieces, as SplitStrategy."""
    if not part or k <= 0:
        return []
    k = min(k, len(part))
    if k == 1:
        return [part[(len(part) - 1) // 2]]  # git bisect's midpoint (the older on a tie)
    return list(dict.fromkeys(part[(j * len(part)) // (k + 1)] for j in range(1, k + 1)))


def next_candidates(open_: Sequence[str], picks: Sequence[str], k: int) -> list[str]:
    """The possible next picks once `picks` are decided, likeliest first.

    `open_`: the commits still possible besides the bad end, oldest first; `picks`: this
    round's. The parts between picks come out in an order that interleaves outcomes
    (the two halves of a single pick first), so a limit keeps both possibilities.
    """
    where = sorted(open_.index(p) for p in picks if p in open_)
    if not where:
        return []
    bounds = [-1, *where, len(open_)]
    parts = [list(open_[lo + 1 : hi]) for lo, hi in itertools.pairwise(bounds)]
    # A pick found bad leaves the part before it; good, the part after it (the pick itself
    # is then the bad end or a good one, not measured again).
    per_part = [split_points(part, k) for part in parts]
    out: list[str] = []
    for rank in range(max((len(p) for p in per_part), default=0)):
        for points in per_part:
            if rank < len(points):
                out.append(points[rank])
    return list(dict.fromkeys(out))
