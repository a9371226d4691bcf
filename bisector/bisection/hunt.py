"""One hunt for a culprit, as the pipeline runs it and the report reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from bisector.bisection.confirm import Confirmation
from bisector.bisection.endpoints import Endpoints
from bisector.report.model import ProfileDiff, RevertCheck
from bisector.search.base import Found, Search


@dataclass
class Hunt:
    """One search for a culprit: the first over the range as it is, each later one with
    the culprits found before reverted in every candidate that contains them."""

    reverted: tuple[str, ...]  # the culprits reverted in its candidates (that contain them)
    ends: Endpoints
    search: Search
    found: Found
    descended: list[str]  # the merges it descended into, outermost first
    merges: list[str]  # the merges that brought its culprit in (for the report)
    confirmation: Confirmation
    revert: RevertCheck | None = None  # the bad endpoint with this and earlier culprits reverted
    profiles: list[ProfileDiff] = field(default_factory=list)  # the culprit's against its parent's

    @property
    def confirmed(self) -> bool:
        return self.found.culprit is not None and self.confirmation.confirmed
