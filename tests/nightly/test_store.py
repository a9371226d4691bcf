"""The nightly database: schema, WAL, hunts keyed by job + range, refusal of foreign files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bisector.errors import BisectorError
from bisector.nightly.report import write_report
from bisector.nightly.store import HUNTING, NightlyStore, StoredRun, nightly_lock


def test_runs_and_hunts_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "state" / "nightly.db"
    store = NightlyStore(path)
    store.put_run("job", "conflicts", StoredRun(7, "a" * 40, "SUCCESS", 1.0, 45.0, "ok"))
    store.put_run("job", "conflicts", StoredRun(5, None, "FAILURE", 0.5, None, "no logs"))
    hunt = store.start_hunt("job", "conflicts", ("g" * 40, 5), ("b" * 40, 7), tmp_path / "h")
    again = store.start_hunt("job", "conflicts", ("g" * 40, 5), ("b" * 40, 7), tmp_path / "x")
    store.add_usage(hunt.id, evaluations=2, cluster_s=30.0)
    store.update_hunt(hunt.id, status="found", culprit="c" * 40)
    store.close()

    reopened = NightlyStore(path)
    try:
        assert again.id == hunt.id and again.run_dir == tmp_path / "h"  # one hunt per range
        assert [r.run for r in reopened.series("job", "conflicts")] == [5, 7]
        assert reopened.series("job", "conflicts", last=1)[0].value == 45.0
        assert reopened.known_runs("job", "conflicts") == {5, 7}
        assert reopened.known_runs("job", "lag") == set()
        stored = reopened.hunt("job", "conflicts", "g" * 40, "b" * 40)
        assert stored is not None
        assert (stored.status, stored.culprit, stored.evaluations) == ("found", "c" * 40, 2)
        assert reopened.usage(hunt.id) == (2, 30.0)
        assert hunt.status == HUNTING
        mode = reopened.db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        reopened.close()


def test_a_database_from_a_newer_bisector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nightly.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(BisectorError, match="newer bisector"):
        NightlyStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nightly.db"
    path.write_text("not sqlite at all, but long enough to have a header page........\n" * 20)
    with pytest.raises(BisectorError, match="not a usable nightly database"):
        NightlyStore(path)


def test_a_state_path_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("not a directory\n")
    with pytest.raises(BisectorError, match="cannot create the nightly state directory"):
        NightlyStore(state / "nightly.db")
    with pytest.raises(BisectorError, match="cannot create the nightly state directory"):
        nightly_lock(state)


def test_a_lock_path_that_is_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "nightly.lock").mkdir()
    with pytest.raises(BisectorError, match="cannot open lock file"), nightly_lock(tmp_path):
        pass


def test_a_reports_path_under_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "reports").write_text("not a directory\n")
    with pytest.raises(BisectorError, match="cannot create the report directory"):
        write_report(tmp_path / "reports" / "job" / "a-b", {}, None)
