"""Crash-safe state: the run's journal and the repository-wide measurement cache.

Both are JSON Lines files appended one fsync'ed line at a time, so a kill -9 can
lose at most the line being written; a torn last line is ignored on reading.
The journal (`<run dir>/journal.jsonl`) holds every record of one run, one typed
record per kind (below) and one reader (`read_journal`); an infrastructure skip an
earlier session of the run journaled is history there, not an answer: the session
that opens the journal measures that commit again. Except a commit that could not be
launched in LAUNCH_FAILED_SESSIONS earlier sessions, beside other commits that did
launch: that is its tree (an apiserver that exits at start), and launching it again in
every resume cost a build and `launch_attempts` launches each time; it stays a skip for
this run (`--fresh` tries it again; still never cached). The cache
(`<git dir>/bisector/measurements.jsonl`) holds measurements of every run keyed by
(tree id, config fingerprint), so a later bisect over an overlapping range reuses
them. Only measurements with a value are cached: an infrastructure skip (an outage,
a launch that failed) says nothing about the tree and is tried again by a later run.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from bisector.errors import LaunchError
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import LogSeen, seen_log

# Earlier sessions in which a commit's every launch attempt failed (in one of them beside
# another commit that launched and was measured) before its launch skip is kept.
LAUNCH_FAILED_SESSIONS = 2


def append_line(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # A torn line from a previous crash must not glue onto this one.
        if os.fstat(fd).st_size and not _ends_with_newline(path):
            line = "\n" + line
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            continue  # a line torn by a crash
        if isinstance(record, dict):
            yield record


# -- records ------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    kind: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Start(Record):
    kind: ClassVar[str] = "start"
    good: str = ""
    bad: str = ""
    command: str = ""
    # What `bisector cleanup` needs to rebuild the backend and tear down what is left up.
    repo: str = ""
    config: str = ""
    backend: str = ""
    # What the run answers (RunSettings.question): a run directory answers one question.
    question: str = ""


@dataclass(frozen=True)
class Resume(Record):
    kind: ClassVar[str] = "resume"
    command: str = ""


@dataclass(frozen=True)
class Begin(Record):
    """An evaluation started: its cluster may be up until `Cleaned` or a measurement."""

    kind: ClassVar[str] = "begin"
    commit: str = ""
    slot: int = 0
    eval_dir: str = ""
    why: str = ""


@dataclass(frozen=True)
class Measured(Record):
    kind: ClassVar[str] = "measurement"
    fingerprint: str = ""
    measurement: Measurement = field(default_factory=lambda: Measurement("", "", ""))

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "fingerprint": self.fingerprint,
            "measurement": self.measurement.to_dict(),
        }


@dataclass(frozen=True)
class Cleaned(Record):
    """The evaluation's teardown succeeded (journaled only then)."""

    kind: ClassVar[str] = "cleaned"
    eval_dir: str = ""


@dataclass(frozen=True)
class TeardownFailed(Record):
    """A teardown that did not finish: what may be left up, for the report and cleanup."""

    kind: ClassVar[str] = "teardown_failed"
    commit: str = ""
    eval_dir: str = ""
    error: str = ""


@dataclass(frozen=True)
class Verdict(Record):
    kind: ClassVar[str] = "verdict"
    commit: str = ""
    verdict: str = ""


@dataclass(frozen=True)
class Mark(Record):
    """A verdict a person gave (`bisector mark`): used as if measured, said in the report."""

    kind: ClassVar[str] = "mark"
    commit: str = ""
    verdict: str = ""
    note: str = ""


@dataclass(frozen=True)
class ThresholdSet(Record):
    kind: ClassVar[str] = "threshold"
    value: float = 0.0
    how: str = ""


@dataclass(frozen=True)
class LikelihoodSet(Record):
    kind: ClassVar[str] = "likelihood"
    describe: str = ""


@dataclass(frozen=True)
class Interrupted(Record):
    kind: ClassVar[str] = "interrupted"


@dataclass(frozen=True)
class Prefetch(Record):
    """A build made ahead of its evaluation (`[run] prefetch_builds`), or why it failed."""

    kind: ClassVar[str] = "prefetch"
    commit: str = ""
    error: str | None = None  # None: built into the backend's build cache


@dataclass(frozen=True)
class EarlyGoodWithdrawn(Record):
    """A full-length run contradicted an early good verdict: none counts in this run."""

    kind: ClassVar[str] = "early_good_withdrawn"
    why: str = ""


@dataclass(frozen=True)
class Pruned(Record):
    """`bisector runs --prune` dropped the evaluations' logs (the report says so): when,
    what it freed, and the evaluation directories whose logs it kept (the report's)."""

    kind: ClassVar[str] = "pruned"
    at: float = 0.0
    freed_bytes: int = 0
    kept: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Done(Record):
    kind: ClassVar[str] = "done"
    culprit: str | None = None


@dataclass(frozen=True)
class Failed(Record):
    """The run stopped on an error (exit 2: endpoints that do not separate, a backend that
    would not start; or a bug): what it said, so `status` does not call it killed."""

    kind: ClassVar[str] = "failed"
    reason: str = ""


RECORD_TYPES: dict[str, type[Record]] = {
    cls.kind: cls
    for cls in (
        Start,
        Resume,
        Begin,
        Measured,
        Cleaned,
        TeardownFailed,
        Verdict,
        Mark,
        ThresholdSet,
        LikelihoodSet,
        Interrupted,
        Prefetch,
        EarlyGoodWithdrawn,
        Pruned,
        Done,
        Failed,
    )
}


def parse_record(data: dict[str, Any]) -> Record | None:
    """The typed record of one journal line; None for an unknown or malformed one."""
    cls = RECORD_TYPES.get(str(data.get("type")))
    if cls is None:
        return None
    try:
        if cls is Measured:
            raw = data.get("measurement")
            if not isinstance(raw, dict):
                return None
            return Measured(str(data.get("fingerprint", "")), Measurement.from_dict(raw))
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
    except (TypeError, ValueError):
        return None


def read_journal(path: Path) -> list[Record]:
    """Every readable record of a journal file, in order (the one reader)."""
    return [r for r in map(parse_record, read_lines(path)) if r is not None]


# -- the journal ------------------------------------------------------------------------


def _launch_skip(m: Measurement) -> bool:
    return m.infra_skip and m.skipped_at == LaunchError.kind


class Journal:
    """Measurements of this run plus reusable ones from earlier runs, for one fingerprint."""

    def __init__(self, path: Path, cache_file: Path, fingerprint: str) -> None:
        self.path = path
        self.cache_file = cache_file
        self.fingerprint = fingerprint
        self.records = read_journal(path)
        self.own: list[Measurement] = []
        self.by_tree: dict[str, list[Measurement]] = defaultdict(list)
        self.cached_ids: set[str] = set()
        # Measured by an earlier session of this run directory (not by this process).
        self.earlier_ids: set[str] = set()
        self.verdicts: dict[str, str] = {}  # commit -> the latest verdict journaled
        # Infrastructure skips of earlier sessions: in the report, never in a verdict.
        self.retired: list[Measurement] = []
        # Commits kept as skips: launched in vain in LAUNCH_FAILED_SESSIONS sessions.
        self.unlaunchable: dict[str, int] = {}
        seen: set[str] = set()
        for record in self.records:
            if isinstance(record, Measured):
                m = record.measurement
                self.own.append(m)
                self.earlier_ids.add(m.id)
                seen.add(m.id)
                if m.infra_skip:
                    self.retired.append(m)
                else:
                    self.by_tree[m.tree].append(m)
            elif isinstance(record, Verdict):
                self.verdicts[record.commit] = record.verdict
        self._keep_launch_skips()
        for record in read_journal(cache_file):
            if not isinstance(record, Measured) or record.fingerprint != fingerprint:
                continue
            m = record.measurement
            # Only values are reusable: a skip cached by an older version is retried. Not
            # a run stopped early: its value is only known to pass its own run's threshold.
            reusable = m.value is not None and not m.stopped_early
            if m.id not in seen and m.phase != "confirm" and reusable:
                seen.add(m.id)
                self.cached_ids.add(m.id)
                self.by_tree[m.tree].append(m)

    def _keep_launch_skips(self) -> None:
        """Move from `retired` to the verdicts the launch skips of a tree that failed to
        launch in LAUNCH_FAILED_SESSIONS sessions, in one of which other trees launched
        and measured (the machine could launch: the failure followed the tree)."""
        session = 0
        failed: dict[str, set[int]] = defaultdict(set)
        measured: dict[int, set[str]] = defaultdict(set)  # session -> trees with a value
        for record in self.records:
            if isinstance(record, (Start, Resume)):
                session += 1
            elif isinstance(record, Measured):
                m = record.measurement
                if m.value is not None:
                    measured[session].add(m.tree)
                elif _launch_skip(m):
                    failed[m.tree].add(session)
        for tree, sessions in failed.items():
            # A resumed session measures only what is missing (the rest is replayed), so
            # one session beside other launches is the evidence the machine could launch.
            beside_others = any(measured[n] - {tree} for n in sessions)
            if len(sessions) >= LAUNCH_FAILED_SESSIONS and beside_others:
                kept = [m for m in self.retired if m.tree == tree and _launch_skip(m)]
                self.retired = [m for m in self.retired if m not in kept]
                self.by_tree[tree].extend(kept)
                self.unlaunchable[kept[-1].commit] = len(sessions)

    def write(self, record: Record) -> None:
        append_line(self.path, record.to_json())
        self.records.append(record)
        if isinstance(record, Verdict):
            self.verdicts[record.commit] = record.verdict

    def verdict(self, commit: str, verdict: str) -> None:
        """Journal what git bisect was told about `commit`, unless it was told that already
        (a resumed or rerun search replays its verdicts from the measurements: a replay
        is not a new verdict)."""
        if self.verdicts.get(commit) != verdict:
            self.write(Verdict(commit, verdict))

    def add(self, m: Measurement) -> None:
        record = Measured(self.fingerprint, m)
        self.write(record)
        if m.value is not None and not m.stopped_early:
            append_line(self.cache_file, record.to_json())
        self.own.append(m)
        self.by_tree[m.tree].append(m)

    def logs_seen(self) -> tuple[LogSeen, ...]:
        """The logs of every measurement known (this run's, skips too, and the cache's):
        a later log that is one of them is stale (bisector.measure.provenance)."""
        cached = [m for ms in self.by_tree.values() for m in ms if m.id in self.cached_ids]
        return tuple(seen_log(m) for m in [*self.own, *cached] if m.window or m.head)

    def for_tree(self, tree: str, *, confirm: bool = False) -> list[Measurement]:
        """Measurements usable for a verdict; confirmation uses only its own fresh runs."""
        return [m for m in self.by_tree.get(tree, []) if (m.phase == "confirm") == confirm]

    def of_kind(self, cls: type[Record]) -> list[Record]:
        return [r for r in self.records if isinstance(r, cls)]

    def unfinished(self) -> list[Begin]:
        """Evaluations whose cluster may still be up: begun and not known torn down.

        Read in order: a measurement whose teardown succeeded, or a `Cleaned`, closes an
        evaluation; a measurement whose teardown failed, or a `TeardownFailed`, leaves
        it open until a later `Cleaned`.
        """
        begun: dict[str, Begin] = {}
        open_: dict[str, bool] = {}
        for r in self.records:
            if isinstance(r, Begin):
                begun[r.eval_dir] = r
                open_[r.eval_dir] = True
            elif isinstance(r, Measured):
                open_[r.measurement.eval_dir] = r.measurement.teardown_error is not None
            elif isinstance(r, TeardownFailed):
                open_[r.eval_dir] = True
            elif isinstance(r, Cleaned):
                open_[r.eval_dir] = False
        return [b for eval_dir, b in begun.items() if open_.get(eval_dir)]

    def last(self, cls: type[Record]) -> Record | None:
        for record in reversed(self.records):
            if isinstance(record, cls):
                return record
        return None
