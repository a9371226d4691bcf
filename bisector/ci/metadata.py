"""What a CI run's started.json / finished.json say: commit, result, time.

Two eras write them (shared/reference/kubernetes.md):
* bootstrap (kubernetes-jenkins): `version` / `repo-version` / `job-version` strings
  from hack/lib/version.sh (`v1.7.0-alpha.4.123+7043372d05510b`, 14 hex digits of
  the commit after `+`), and `metadata.repo-commit` with the full hash;
* pod-utils (kubernetes-ci-logs): `revision` with the full hash, `repos`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# `+` then the abbreviated commit; `-dirty` may follow. An exact tag has no `+`.
_VERSION_COMMIT = re.compile(r"\+([0-9a-f]{7,40})(?:-dirty)?$")
_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_REPO_REF_SHA = re.compile(r"[:,]([0-9a-f]{40})$")


@dataclass(frozen=True)
class RunInfo:
    """One CI run as its metadata describes it."""

    run: int
    commit: str | None  # full or abbreviated hash; None when the metadata names none
    result: str | None  # SUCCESS / FAILURE / ABORTED..., None while running
    started: float | None  # epoch seconds
    finished: float | None


def commit_from_version(version: str) -> str | None:
    """`v1.7.0-alpha.4.123+7043372d05510b` -> `7043372d05510b`; tags -> None."""
    match = _VERSION_COMMIT.search(version.strip())
    return match.group(1) if match else None


def _commit_in(doc: Mapping[str, object]) -> str | None:
    metadata = doc.get("metadata")
    meta = metadata if isinstance(metadata, Mapping) else {}
    for value in (doc.get("revision"), meta.get("repo-commit"), meta.get("revision")):
        if isinstance(value, str) and _FULL_SHA.match(value):
            return value
    repos = doc.get("repos") or meta.get("repos")
    if isinstance(repos, Mapping):
        for key, ref in repos.items():
            if str(key).endswith("kubernetes") and isinstance(ref, str):
                match = _REPO_REF_SHA.search(ref)
                if match:
                    return match.group(1)
    for key in ("repo-version", "version", "job-version"):
        for source in (doc, meta):
            value = source.get(key)
            if isinstance(value, str) and (commit := commit_from_version(value)):
                return commit
    return None


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def parse_run(
    run: int, started: Mapping[str, object] | None, finished: Mapping[str, object] | None
) -> RunInfo:
    """Combine both files; finished.json wins where both name a commit."""
    commit = None
    for doc in (finished, started):
        if doc and (commit := _commit_in(doc)):
            break
    result: str | None = None
    if finished:
        raw = finished.get("result")
        if isinstance(raw, str):
            result = raw.upper()
        elif isinstance(finished.get("passed"), bool):
            result = "SUCCESS" if finished["passed"] else "FAILURE"
    return RunInfo(
        run=run,
        commit=commit,
        result=result,
        started=_number(started.get("timestamp")) if started else None,
        finished=_number(finished.get("timestamp")) if finished else None,
    )
