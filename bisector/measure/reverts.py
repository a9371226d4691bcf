"""Candidates with found culprits reverted: what the search asks about, and what is built.

Once a culprit is found, the next hunt over the same range measures every candidate
that contains it with it reverted (the way a build fix applies to the trees in its
range), so the search sees only what the culprits found so far do not explain. The
candidate's own commit stays what the search and the report talk about; what is
checked out and built is the tool's commit of it with the culprits reverted
(GitRepo.revert_onto), whose tree keys the journal like any other: a measurement of
the plain candidate never stands for the reverted one, and a resumed run finds the
reverted one's measurements again (the same reverts give the same tree).

A candidate whose reverts do not apply is a skip of its own tree (like one that does
not build): final, not retried, keyed by a name of its own so a resumed run knows it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from bisector.gitrepo import GitRepo


@dataclass(frozen=True)
class Substitute:
    """What measuring `commit` means under the reverts in force."""

    commit: str  # the commit the search asked about
    build: str  # what is checked out and built: `commit`, or the tool's commit of it
    tree: str  # the journal's key for its measurements
    reverted: tuple[str, ...] = ()  # the culprits reverted in it, as reverted (newest first)
    conflict: str = ""  # why the reverts do not apply ("" when they do)
    conflict_files: tuple[str, ...] = ()


class Reverts:
    """The culprits reverted in every candidate that contains them (none at first)."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self.culprits: tuple[str, ...] = ()
        self._trees: dict[str, str] = {}
        self._made: dict[tuple[str, tuple[str, ...]], Substitute] = {}
        self._lock = threading.Lock()

    def set(self, culprits: Sequence[str]) -> None:
        """From now on, revert `culprits` in every candidate that contains them."""
        with self._lock:
            self.culprits = tuple(culprits)

    def tree_of(self, commit: str) -> str:
        with self._lock:
            known = self._trees.get(commit)
        if known is None:
            known = self.repo.tree_of(commit)
            with self._lock:
                self._trees[commit] = known
        return known

    def of(self, commit: str, culprits: Sequence[str] | None = None) -> Substitute:
        """`commit` as measured with `culprits` (default: those in force) reverted where it
        contains them."""
        wanted = self.culprits if culprits is None else tuple(culprits)
        inside = tuple(c for c in wanted if wanted and self.repo.is_ancestor(c, commit))
        if not inside:
            return Substitute(commit, commit, self.tree_of(commit))
        key = (commit, inside)
        with self._lock:
            made = self._made.get(key)
        if made is not None:
            return made
        reverted = self.repo.revert_onto(commit, inside)
        if reverted.commit is None or reverted.tree is None:
            bad = reverted.conflict_with or inside[0]
            files = ", ".join(reverted.conflict_files) or "no first parent to revert against"
            said = f"reverting {bad[:12]} on {commit[:12]} does not apply (conflict: {files})"
            digest = hashlib.sha256(":".join([commit, *reverted.culprits]).encode()).hexdigest()
            made = Substitute(
                commit,
                commit,
                f"unrevertable:{digest[:40]}",
                reverted.culprits,
                said,
                reverted.conflict_files,
            )
        else:
            made = Substitute(commit, reverted.commit, reverted.tree, reverted.culprits)
        with self._lock:
            self._made[key] = made
            if made.build != commit:
                self._trees[made.build] = made.tree
        return made
