"""The nightly's memory: scored CI runs and hunts in SQLite, and the one-process lock.

WAL journal mode and one transaction per change, so a kill at any moment leaves
the database as of the last finished change. The lock is an `fcntl.flock` on
`<state dir>/nightly.lock`: the kernel drops it when the holder dies, so a
crashed nightly never blocks the next one.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisector.dirs import ensure_dir
from bisector.errors import BisectorError
from bisector.exitcodes import NightlyExit
from bisector.locking import exclusive

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    job TEXT NOT NULL,
    run INTEGER NOT NULL,
    metric TEXT NOT NULL,
    commit_sha TEXT,
    result TEXT,
    started REAL,
    value REAL,              -- NULL: no logs, no data for the metric
    status TEXT NOT NULL,    -- ok, no logs, no data
    scored_at REAL NOT NULL,
    PRIMARY KEY (job, run, metric)
);
CREATE TABLE IF NOT EXISTS hunts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    metric TEXT NOT NULL,
    good_commit TEXT NOT NULL,
    bad_commit TEXT NOT NULL,
    good_run INTEGER NOT NULL,
    bad_run INTEGER NOT NULL,
    status TEXT NOT NULL,    -- hunting, found, inconclusive, budget, unbisected, failed
    run_dir TEXT NOT NULL,
    report_dir TEXT,
    culprit TEXT,
    reason TEXT,
    evaluations INTEGER NOT NULL DEFAULT 0,
    cluster_s REAL NOT NULL DEFAULT 0,
    regression TEXT,         -- the step, JSON: a hunt cut short resumes from it
    created REAL NOT NULL,
    updated REAL NOT NULL,
    UNIQUE (job, metric, good_commit, bad_commit)
);
"""
HUNTING = "hunting"  # the only status a later night picks up again (a crash cut it short)


@dataclass(frozen=True)
class StoredRun:
    run: int
    commit: str | None
    result: str | None
    started: float | None
    value: float | None
    status: str


@dataclass(frozen=True)
class Hunt:
    id: int
    job: str
    metric: str
    good_commit: str
    bad_commit: str
    good_run: int
    bad_run: int
    status: str
    run_dir: Path
    report_dir: str | None
    culprit: str | None
    reason: str | None
    evaluations: int
    cluster_s: float
    regression: str | None


class NightlyStore:
    """One connection to the database; every write is its own committed transaction."""

    def __init__(self, path: Path) -> None:
        _make_dir(path.parent)
        try:
            # Parallel bisection slots may record budget usage from their threads.
            self.db = sqlite3.connect(
                path, timeout=30, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise BisectorError(f"cannot open the nightly database {path}: {exc}") from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                self.db.close()
                raise BisectorError(
                    f"{path} was written by a newer bisector (schema {version}); upgrade bisector"
                )
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise BisectorError(
                f"{path} is not a usable nightly database ({exc}); move it away and rerun"
            ) from None
        self.path = path
        self._lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    def known_runs(self, job: str, metric: str) -> set[int]:
        rows = self.db.execute("SELECT run FROM runs WHERE job=? AND metric=?", (job, metric))
        return {int(r[0]) for r in rows}

    def put_run(self, job: str, metric: str, run: StoredRun) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
            (
                job,
                run.run,
                metric,
                run.commit,
                run.result,
                run.started,
                run.value,
                run.status,
                time.time(),
            ),
        )

    def series(self, job: str, metric: str, last: int | None = None) -> list[StoredRun]:
        """The job's scored runs in run order (the latest `last` of them)."""
        rows = self.db.execute(
            "SELECT run, commit_sha, result, started, value, status FROM runs "
            "WHERE job=? AND metric=? ORDER BY run",
            (job, metric),
        ).fetchall()
        runs = [StoredRun(int(r[0]), r[1], r[2], r[3], r[4], r[5]) for r in rows]
        return runs[-last:] if last else runs

    def hunt(self, job: str, metric: str, good: str, bad: str) -> Hunt | None:
        row = self.db.execute(
            "SELECT * FROM hunts WHERE job=? AND metric=? AND good_commit=? AND bad_commit=?",
            (job, metric, good, bad),
        ).fetchone()
        return _hunt(row) if row else None

    def hunts(self, job: str | None = None) -> list[Hunt]:
        query = "SELECT * FROM hunts" + (" WHERE job=?" if job else "") + " ORDER BY id"
        return [_hunt(r) for r in self.db.execute(query, (job,) if job else ())]

    def start_hunt(
        self,
        job: str,
        metric: str,
        good: tuple[str, int],
        bad: tuple[str, int],
        run_dir: Path,
        *,
        regression: str | None = None,
    ) -> Hunt:
        now = time.time()
        self.db.execute(
            "INSERT OR IGNORE INTO hunts (job, metric, good_commit, bad_commit, good_run, "
            "bad_run, status, run_dir, regression, created, updated) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                job,
                metric,
                good[0],
                bad[0],
                good[1],
                bad[1],
                HUNTING,
                str(run_dir),
                regression,
                now,
                now,
            ),
        )
        found = self.hunt(job, metric, good[0], bad[0])
        assert found is not None
        return found

    def update_hunt(self, hunt_id: int, **fields: Any) -> None:
        names = sorted(fields)
        assignments = ", ".join(f"{name}=?" for name in names)
        self.db.execute(
            f"UPDATE hunts SET {assignments}, updated=? WHERE id=?",
            (*[fields[n] for n in names], time.time(), hunt_id),
        )

    def add_usage(self, hunt_id: int, *, evaluations: int = 0, cluster_s: float = 0.0) -> None:
        with self._lock:
            self._add_usage(hunt_id, evaluations, cluster_s)

    def _add_usage(self, hunt_id: int, evaluations: int, cluster_s: float) -> None:
        self.db.execute(
            "UPDATE hunts SET evaluations=evaluations+?, cluster_s=cluster_s+?, updated=? "
            "WHERE id=?",
            (evaluations, cluster_s, time.time(), hunt_id),
        )

    def usage(self, hunt_id: int) -> tuple[int, float]:
        row = self.db.execute(
            "SELECT evaluations, cluster_s FROM hunts WHERE id=?", (hunt_id,)
        ).fetchone()
        return int(row[0]), float(row[1])


def _hunt(row: tuple[Any, ...]) -> Hunt:
    return Hunt(
        id=int(row[0]),
        job=row[1],
        metric=row[2],
        good_commit=row[3],
        bad_commit=row[4],
        good_run=int(row[5]),
        bad_run=int(row[6]),
        status=row[7],
        run_dir=Path(row[8]),
        report_dir=row[9],
        culprit=row[10],
        reason=row[11],
        evaluations=int(row[12]),
        cluster_s=float(row[13]),
        regression=row[14],
    )


def nightly_lock(state_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Hold `<state_dir>/nightly.lock` or raise: one nightly per state directory at a time."""
    _make_dir(state_dir)
    path = state_dir / "nightly.lock"
    return exclusive(
        path,
        lambda holder: BisectorError(
            f"another bisector nightly is running ({holder}, lock {path}); "
            "this one exits: the running one covers tonight",
            exit_code=NightlyExit.BUSY,
        ),
    )


def _make_dir(directory: Path) -> None:
    ensure_dir(
        directory,
        what="the nightly state directory",
        fix="point `nightly.state` (or `nightly.database`) at a directory bisector can write",
    )
