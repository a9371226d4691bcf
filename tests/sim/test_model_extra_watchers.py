"""The model at a procs-sized cluster: extra node watches, a set status period, no NPD."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bisector.sim import RunParams, SimProfile, SimSummary, simulate
from tests.helpers.sim_log import read_log


def run(tmp_path: Path, profile: SimProfile, **params: object) -> SimSummary:
    settings = {"nodes": 50, "duration_s": 60.0, "ramp_s": 5.0, **params}
    return simulate(profile, RunParams(**settings), tmp_path / "a.log")  # type: ignore[arg-type]


def test_extra_watches_cost_nothing_with_the_index_and_saturate_without(tmp_path: Path) -> None:
    # 50 nodes at 1s: 50 events/s. Without the index each is offered to 20,055 watches:
    # 0.2ms + 20,055 x 1.6us = 32ms, ~31 events/s: the cacher falls behind.
    settings = {"status_period_s": 1.0, "npd": False, "extra_watchers": 20_000}
    good = run(tmp_path, SimProfile(), **settings)
    bad = run(tmp_path, replace(SimProfile(), trigger_index=False), **settings)
    plain = run(
        tmp_path, replace(SimProfile(), trigger_index=False), status_period_s=1.0, npd=False
    )
    assert good.conflicts < 10 and good.hwm < 20
    assert plain.conflicts < 10  # the same code without the extra watches keeps up
    assert bad.hwm == 100 and bad.conflicts > 100 * max(good.conflicts, 1)


def test_the_status_period_and_npd_are_run_settings(tmp_path: Path) -> None:
    fast = run(tmp_path, SimProfile(), status_period_s=1.0, npd=False)
    counts = read_log(tmp_path / "a.log")
    slow = run(tmp_path, SimProfile())  # the profile's 10s, with a node-problem-detector
    # ~50 nodes x 57s of status at 1s vs 10s (plus NPD's 30s rounds).
    assert fast.node_patches > 5 * slow.node_patches
    assert counts.node_patches == fast.node_patches
    assert fast.status_updates == fast.node_patches - fast.conflicts  # no NPD writes


def test_cache_reads_wait_while_the_reflector_pushes_into_a_full_channel() -> None:
    # kubernetes 7043372, staging/src/k8s.io/apiserver/pkg/storage/watch_cache.go
    # processEvent: w.Lock() ... w.onEvent(watchCacheEvent) (the blocking push into the
    # cacher's incoming channel) ... under the lock; a GET with a resourceVersion reads
    # watchCache under its RLock (WaitUntilFreshAndGet).
    from bisector.sim.cacher import NodeCacher

    profile = replace(SimProfile(trigger_index=False), incoming_capacity=2,
                      dispatch_base_us=100_000.0, dispatch_per_watcher_us=0.0)  # fmt: skip
    cacher = NodeCacher(profile, nodes=4)
    assert cacher.cache_free_at(0.0) == 0.0
    for k in range(6):  # six writes at once: the channel (2) fills, the reflector waits
        cacher.commit(0.0, k % 4, watch_delay=0.0)
    # An event leaves the channel when its dispatch starts: events 1-3 get in at once,
    # event 4 when event 2's dispatch starts (0.1s), 5 at 0.2s, 6 at 0.3s; the reflector
    # holds the lock from each push to the next.
    assert cacher.cache_free_at(0.05) == pytest.approx(0.1)
    assert cacher.cache_free_at(0.15) == pytest.approx(0.2)
    assert cacher.cache_free_at(0.25) == pytest.approx(0.3)
    assert cacher.cache_free_at(0.35) == 0.35  # nothing waits any more
