"""A nightly hunt keeps what its backend can do under the budget wrapper (issue 27, item 1).

`bisect_hunt` hands `run_bisection` its backend wrapped in `BudgetedBackend`; before the
ForwardingBackend contract the wrapper hid PartialLogs and PrefetchBuilds from the
evaluator's isinstance checks, so every hunt waited each whole warmup and built in turn,
silently. Here a hunt with the sim backend (both capabilities), `check_every` and
`prefetch_builds` set, must end search warmups early and prefetch builds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.config import Section
from bisector.measure.journal import read_lines
from bisector.nightly.config import Budget, JobConfig, NightlyConfig
from bisector.nightly.hunt import FOUND, bisect_hunt, hunt_run_dir
from bisector.nightly.store import NightlyStore
from bisector.sim.demo_repo import PROFILE_PATH, create_demo_repo
from tests.helpers.nightly import SIM_RAMP, demo_ci_runs


def _job(repo: Path) -> JobConfig:
    bisect = Section(
        {
            "run": {
                "backend": "sim",
                "warmup": "3m",
                "check_every": "10s",
                "prefetch_builds": 1,
            },
            "backends": {
                "sim": {"profile": PROFILE_PATH, "nodes": 5000, "ramp": SIM_RAMP, "seed": 2}
            },
        },
        "nightly.toml",
        "nightly.jobs[0]",
    )
    return JobConfig("j", "ci-j", "b", "conflicts", None, repo, Budget(), 2, None, bisect, "j")


@pytest.mark.slow
def test_a_hunt_ends_warmups_early_and_prefetches_builds_through_its_budget(
    tmp_path: Path,
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    _runs, good, bad = demo_ci_runs(demo)
    state = tmp_path / "state"
    cfg = NightlyConfig(
        tmp_path / "nightly.toml", state, state / "n.db", state / "reports", None, 10, ()
    )
    store = NightlyStore(cfg.database)
    try:
        job = _job(demo.path)
        hunt = store.start_hunt(
            "j", "conflicts", (good, 100), (bad, 110), hunt_run_dir(cfg, job, good, bad)
        )
        result = bisect_hunt(cfg, job, store, hunt)
    finally:
        store.close()
    assert result.status == FOUND, result.reason
    records = list(read_lines(hunt.run_dir / "journal.jsonl"))
    measured = [r["measurement"] for r in records if r.get("type") == "measurement"]
    early = [m for m in measured if m.get("stopped_early")]
    assert early, "no search warmup ended early: the budget wrapper hid PartialLogs"
    prefetched = [r for r in records if r.get("type") == "prefetch"]
    assert prefetched, "no build was prefetched: the budget wrapper hid PrefetchBuilds"
