"""Crash-safe state: the run's journal and the repository-wide measurement cache.

Both are JSON Lines files appended one fsync'ed line at a time, so a kill -9 can
lose at most the line being written; a torn last line is ignored on reading.
The journal (`<run dir>/journal.jsonl`) holds every record of one run; the cache
(`<git dir>/bisector/measurements.jsonl`) holds measurements of every run keyed by
(tree id, config fingerprint), so a later bisect over an overlapping range reuses them.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bisector.search.measure import Measurement


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
        except json.JSONDecodeError:
            continue  # a line torn by a crash
        if isinstance(record, dict):
            yield record


class Journal:
    """Measurements of this run plus reusable ones from earlier runs, for one fingerprint."""

    def __init__(self, run_dir: Path, cache_file: Path, fingerprint: str) -> None:
        self.path = run_dir / "journal.jsonl"
        self.cache_file = cache_file
        self.fingerprint = fingerprint
        self.records = list(read_lines(self.path))
        self.own: list[Measurement] = []
        self.by_tree: dict[str, list[Measurement]] = defaultdict(list)
        self.cached_ids: set[str] = set()
        seen: set[str] = set()
        for record in self.records:
            if record.get("type") == "measurement":
                m = Measurement.from_dict(record["measurement"])
                self.own.append(m)
                self.by_tree[m.tree].append(m)
                seen.add(m.id)
        for record in read_lines(cache_file):
            if record.get("fingerprint") != fingerprint or record.get("type") != "measurement":
                continue
            m = Measurement.from_dict(record["measurement"])
            if m.id not in seen and m.phase != "confirm":
                seen.add(m.id)
                self.cached_ids.add(m.id)
                self.by_tree[m.tree].append(m)

    def write(self, kind: str, **fields: Any) -> None:
        record = {"type": kind, **fields}
        append_line(self.path, record)
        self.records.append(record)

    def add(self, m: Measurement) -> None:
        record = {
            "type": "measurement",
            "fingerprint": self.fingerprint,
            "measurement": m.to_dict(),
        }
        append_line(self.path, record)
        append_line(self.cache_file, record)
        self.records.append(record)
        self.own.append(m)
        self.by_tree[m.tree].append(m)

    def for_tree(self, tree: str, *, confirm: bool = False) -> list[Measurement]:
        """Measurements usable for a verdict; confirmation uses only its own fresh runs."""
        return [m for m in self.by_tree.get(tree, []) if (m.phase == "confirm") == confirm]

    def unfinished(self) -> list[dict[str, Any]]:
        """`begin` records of evaluations a crash cut short (no measurement, no cleanup)."""
        closed = {
            r["measurement"].get("eval_dir") for r in self.records if r.get("type") == "measurement"
        }
        closed |= {r.get("eval_dir") for r in self.records if r.get("type") == "cleaned"}
        return [r for r in self.records if r.get("type") == "begin" and r["eval_dir"] not in closed]

    def last(self, kind: str) -> dict[str, Any] | None:
        for record in reversed(self.records):
            if record.get("type") == kind:
                return dict(record)
        return None
