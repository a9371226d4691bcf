"""A hunt whose job config changed asks another question (issue 20, class 4): it goes on
in a run directory of its own, never answered by the earlier config's measurements, and
the earlier directory is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.config import Section, load_config
from bisector.nightly.config import Budget, JobConfig, NightlyConfig
from bisector.nightly.hunt import FOUND, bisect_hunt, hunt_run_dir
from bisector.nightly.store import NightlyStore
from tests.helpers.faults import FaultDriver, measurements, write_fault_config
from tests.helpers.repo import BuiltRepo, build_repo


def _job(built: BuiltRepo, driver: FaultDriver, threshold: float | None) -> JobConfig:
    section = load_config(driver.config)
    data = dict(section.data)
    run = dict(section.table("run").data)
    if threshold is not None:
        run["threshold"] = threshold
    data["run"] = run
    bisect = Section(data, section.file, section.path)
    return JobConfig(
        "j", "ci-j", "b", "conflicts", None, built.path, Budget(), 2, None, bisect, "j"
    )


@pytest.mark.slow
def test_a_hunt_whose_job_config_changed_goes_on_in_a_directory_of_its_own(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", [2, 2, 2, 40, 40, 40])
    driver = write_fault_config(tmp_path / "cluster")
    state = tmp_path / "state"
    cfg = NightlyConfig(
        tmp_path / "nightly.toml", state, state / "n.db", state / "reports", None, 10, ()
    )
    store = NightlyStore(cfg.database)
    good, bad = built.mainline[0], built.mainline[-1]
    try:
        job = _job(built, driver, None)
        hunt = store.start_hunt(
            "j", "conflicts", (good, 100), (bad, 110), hunt_run_dir(cfg, job, good, bad)
        )
        first = bisect_hunt(cfg, job, store, hunt)
        assert first.status == FOUND, first.reason
        before = (hunt.run_dir / "journal.jsonl").read_text()

        changed = _job(built, driver, 20.0)  # the job now gives a threshold
        again = store.hunt("j", "conflicts", good, bad)
        assert again is not None and again.run_dir == hunt.run_dir
        second = bisect_hunt(cfg, changed, store, again)
        assert second.status == FOUND, second.reason
        moved = store.hunt("j", "conflicts", good, bad)
        assert moved is not None and moved.run_dir != hunt.run_dir
        assert moved.run_dir.parent == hunt.run_dir.parent
        assert second.evidence.run_dir == str(moved.run_dir)
        assert second.evidence.threshold is not None
        assert second.evidence.threshold.how == "given"
        assert measurements(moved.run_dir), "answered by the earlier config's measurements"
        assert (hunt.run_dir / "journal.jsonl").read_text() == before  # left as it was

        third = bisect_hunt(cfg, changed, store, moved)  # the same question again: resumes
        assert third.status == FOUND and third.evidence.run_dir == str(moved.run_dir)
    finally:
        store.close()
        driver.kill_leftovers()
