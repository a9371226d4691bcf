"""What a procs evaluation checks out beside the candidate: the harness's commit (its
hollow node is built from it, bisector.backends.procs.harness). An evaluation run where
only the candidate was fetched (a Job's pod, bisector.executors) fetches it too."""

from __future__ import annotations

from bisector.backends.procs.options import _commit, harness_revision
from bisector.config import Section


def revisions(section: Section) -> tuple[str, ...]:
    """The harness revision as `git worktree add` names it (a release tag as a tag)."""
    return (harness_revision(_commit(section, "harness_commit")),)
