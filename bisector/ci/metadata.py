"""What a CI run's started.json / finished.json say: commit, result, time.

Two eras write them (shared/reference/kubernetes.md):
* bootstrap (kubernetes-jenkins): `version` / `repo-version` / `job-version` strings
  from hack/lib/version.sh (`v1.7.0-alpha.4.123+7043372d05510b`, 14 hex digits of
  the commit after `+`), and `metadata.repo-commit` with the full hash;
* pod-utils (kubernetes-ci-logs): `revision` with the full hash, `repos`.

Everything in them is outside input and checked: a field of the wrong type, a
timestamp that is NaN, infinite, negative, far in the future or a string is
ignored and said in `RunInfo.problems` (the run is shown with an unknown date);
a timestamp in milliseconds is read as such. Nothing here raises.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# `+` then the abbreviated commit; `-dirty` may follow. An exact tag has no `+`.
_VERSION_COMMIT = re.compile(r"\+([0-9a-f]{7,40})(?:-dirty)?$")
_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_REPO_REF_SHA = re.compile(r"[:,]([0-9a-f]{40})$")
_RESULT = re.compile(r"^[A-Za-z][A-Za-z _-]{0,30}$")
# Kubernetes CI results start in 2014; a date after tomorrow is not one a run had.
EARLIEST_EPOCH = 1388534400.0  # 2014-01-01
_FUTURE_SLACK_S = 86400.0


@dataclass(frozen=True)
class RunInfo:
    """One CI run as its metadata describes it."""

    run: int
    commit: str | None  # full or abbreviated hash; None when the metadata names none
    result: str | None  # SUCCESS / FAILURE / ABORTED..., None while running
    started: float | None  # epoch seconds; None when absent or not a plausible date
    finished: float | None
    problems: tuple[str, ...] = ()  # what the metadata held that could not be used


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


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def epoch_seconds(value: object, now: float | None = None) -> tuple[float | None, str | None]:
    """A timestamp as epoch seconds, or None and why it is not one.

    Seconds between 2014 and tomorrow are taken as they are; a number that is
    such a date in milliseconds is divided by 1000; anything else (NaN, infinity,
    negative, absurd, a string, a bool, a list) is no date.
    """
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"timestamp {_shown(value)} is not a number"
    try:
        number = float(value)
    except OverflowError:
        return None, f"timestamp {_shown(value)} is not a plausible date"
    if not math.isfinite(number):
        return None, f"timestamp {_shown(value)} is not a number"
    latest = (time.time() if now is None else now) + _FUTURE_SLACK_S
    for scale in (1.0, 1000.0):  # seconds, then milliseconds
        if EARLIEST_EPOCH <= number / scale <= latest:
            return number / scale, None
    return None, f"timestamp {_shown(value)} is not a plausible date"


def _result(finished: Mapping[str, object]) -> tuple[str | None, str | None]:
    raw = finished.get("result")
    if isinstance(raw, str) and _RESULT.match(raw.strip()):
        return raw.strip().upper(), None
    passed = finished.get("passed")
    if isinstance(passed, bool):
        return ("SUCCESS" if passed else "FAILURE"), None
    if raw is not None or passed is not None:
        return None, f"result {_shown(raw if raw is not None else passed)} is not a result"
    return None, None


def parse_run(
    run: int,
    started: Mapping[str, object] | None,
    finished: Mapping[str, object] | None,
    *,
    problems: Sequence[str] = (),
    now: float | None = None,
) -> RunInfo:
    """Combine both files; finished.json wins where both name a commit.

    `problems` (e.g. "finished.json is not JSON") are carried into the result,
    with whatever else cannot be used; `now` is the clock for "in the future".
    """
    said = list(problems)
    started = started if isinstance(started, Mapping) else None
    finished = finished if isinstance(finished, Mapping) else None
    commit = None
    for doc in (finished, started):
        if doc and (commit := _commit_in(doc)):
            break
    result: str | None = None
    if finished:
        result, why = _result(finished)
        if why:
            said.append(f"finished.json: {why}")
    times: list[float | None] = []
    for name, doc in (("started.json", started), ("finished.json", finished)):
        value, why = epoch_seconds(doc.get("timestamp") if doc else None, now)
        times.append(value)
        if why:
            said.append(f"{name}: {why}")
    return RunInfo(run, commit, result, times[0], times[1], tuple(said))
