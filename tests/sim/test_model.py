"""Behaviour of the kubemark model on small clusters, checked against the log it writes."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from bisector.sim import RunParams, SimProfile, SimSummary, simulate
from tests.helpers.sim_log import MAX_OVERLAP_S, read_log

# 500 nodes with 100x the per-watcher cost behave like 5000 nodes without the index:
# ~505 watchers x 160us per event: ~12 events/s, below the ~17/s the node-problem
# detectors alone write, as 5000 x 1.6us is below 5000 nodes' ~167/s.
SLOW_CACHER = SimProfile(trigger_index=False, dispatch_per_watcher_us=160.0)


def run(
    tmp_path: Path, profile: SimProfile, name: str = "a", **params: object
) -> tuple[SimSummary, Path]:
    log = tmp_path / f"{name}.log"
    settings = {"nodes": 500, "duration_s": 180.0, "ramp_s": 20.0, **params}
    return simulate(profile, RunParams(**settings), log), log  # type: ignore[arg-type]


def test_healthy_log_parses_and_matches_the_summary(tmp_path: Path) -> None:
    summary, log = run(tmp_path, SimProfile())
    counts = read_log(log)
    assert counts.bad_lines == []
    assert counts.lines == summary.lines
    assert counts.node_patches == summary.node_patches > 0
    assert counts.conflicts == summary.conflicts
    assert counts.node_writes == summary.node_writes
    assert counts.conflicts < 0.01 * counts.node_patches
    assert max(counts.node_hwm) == summary.hwm < 100
    assert counts.max_backstep_s < MAX_OVERLAP_S  # in time order, up to request overlap


def test_lagging_cacher_log_shows_saturation_lag_and_conflicts(tmp_path: Path) -> None:
    healthy, _ = run(tmp_path, replace(SLOW_CACHER, trigger_index=True), "healthy")
    summary, log = run(tmp_path, SLOW_CACHER, "lagging")
    counts = read_log(log)
    assert counts.bad_lines == []
    assert counts.conflicts == summary.conflicts >= 100 * max(healthy.conflicts, 1)
    assert counts.node_writes == summary.node_writes < healthy.node_writes
    # high-water-mark lines only on a new maximum, up to the channel's capacity
    assert counts.node_hwm == sorted(set(counts.node_hwm))
    assert counts.node_hwm[-1] == summary.hwm == 100
    assert counts.first_saturated_s is not None and counts.first_saturated_s < 120
    # a progress line for every 100th dispatched event
    assert counts.dispatch_nrs == list(range(100, summary.dispatched + 1, 100))
    assert summary.dispatched < summary.node_writes
    assert summary.lag_last_s > 30
    assert counts.max_backstep_s < MAX_OVERLAP_S


def test_same_seed_same_log_other_seed_other_log(tmp_path: Path) -> None:
    a, log_a = run(tmp_path, SLOW_CACHER, "a", seed=7, duration_s=60.0)
    b, log_b = run(tmp_path, SLOW_CACHER, "b", seed=7, duration_s=60.0)
    _, log_c = run(tmp_path, SLOW_CACHER, "c", seed=8, duration_s=60.0)
    assert log_a.read_bytes() == log_b.read_bytes()
    assert a == b
    assert log_a.read_bytes() != log_c.read_bytes()


def test_noise_jitters_costs_and_adds_stalls(tmp_path: Path) -> None:
    quiet, _ = run(tmp_path, SimProfile(), "quiet", seed=3)
    noisy, _ = run(tmp_path, SimProfile(), "noisy", seed=3, noise=0.5)
    assert quiet.cost_factor == 1.0 and quiet.stalls == 0
    assert noisy.cost_factor != 1.0 and noisy.stalls > 0
    assert (noisy.hwm, noisy.conflicts, noisy.lag_max_s) != (
        quiet.hwm,
        quiet.conflicts,
        quiet.lag_max_s,
    )


def test_stuck_watchers_are_force_closed(tmp_path: Path) -> None:
    stuck = replace(SimProfile(), kubelet_watcher_drain_per_s=0.05, watcher_block_timeout_s=0.5)
    healthy, _ = run(tmp_path, SimProfile(), "healthy", duration_s=60.0)
    summary, log = run(tmp_path, replace(stuck, trigger_index=False), "stuck", duration_s=60.0)
    counts = read_log(log)
    assert healthy.forced_closes == 0
    assert counts.forced_closes == summary.forced_closes > 0


def test_a_status_round_is_five_tries_and_later_tries_get_from_etcd(tmp_path: Path) -> None:
    # kubernetes 7043372, pkg/kubelet/kubelet.go: nodeStatusUpdateRetry = 5, and
    # pkg/kubelet/kubelet_node_status.go updateNodeStatus: `for i := 0; i <
    # nodeStatusUpdateRetry; i++ { tryUpdateNodeStatus(i) }` -- five tries, not 1 + 5;
    # tryUpdateNodeStatus reads from the apiserver cache (resourceVersion=0) only on try 0.
    summary, log = run(tmp_path, SLOW_CACHER, duration_s=60.0)
    get = re.compile(r"\] GET /api/v1/nodes/(hollow-node-\d+)(\?resourceVersion=0)?: ")
    tries: dict[str, list[int]] = {}  # per node, the tries of each round
    etcd_gets = 0
    for line in log.read_text(encoding="utf-8").splitlines():
        if m := get.search(line):
            rounds = tries.setdefault(m.group(1), [])
            if m.group(2):  # try 0 starts a round
                rounds.append(1)
            else:
                etcd_gets += 1
                rounds[-1] += 1
    assert summary.failed_status_rounds > 0
    assert max(n for rounds in tries.values() for n in rounds) == 5  # a failed round
    # every 409 but a round's last is followed by a try that GETs from etcd (some pending)
    retries = summary.conflicts - summary.failed_status_rounds
    assert retries - summary.nodes <= etcd_gets <= retries
