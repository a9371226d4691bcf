"""The model at the procs backend's scale against the first real kube-apiserver runs.

Real figures (1 Dec 2026, this project's procs backend on a 2-core machine,
configs/procs-2017.toml: 100 hollow nodes, status every 1 s, 16,000 extra node watches,
5 min warmup; node status PATCHes answered 409 and 200 in the apiserver log):
* the real hunt (`bisector run --good 1444d25 --bad 7043372`, other work on the cores):
  1444d25 2 409s / 8,545 writes; 7043372 7,834 / 474; f93a270 7,366 / 1,067;
  48d0249 (its parent) 0 / 8,867; e59fd18 12 / 8,863;
* `make real` on a quieter machine: 7043372 957 409s / 7,463 writes; f93a270 2,388;
  1444d25 0 / 8,771; 48d0249 1; then procs_measure.py's spread run: 1444d25 0, 7043372
  2,670.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from bisector.sim import SimProfile, SimSummary, simulate
from bisector.sim.calibration import PROCS_BUSY_SLOWDOWN, PROCS_QUIET_SLOWDOWN, procs_params
from bisector.sim.kubelet import PROCS_NODE_LOOKUP, Lookup, check_lookup, lookup_table
from tests.helpers.sim_log import MAX_OVERLAP_S, read_log

GOOD, BAD = SimProfile(), SimProfile(trigger_index=False)
REAL_GOOD_409S = (2, 0, 12, 0, 1, 0)  # hunt: 1444d25, 48d0249, e59fd18; quiet: 1444d25 x2, 48d0249
REAL_GOOD_WRITES = (8545, 8867, 8863, 8771)  # status PATCH 200s
REAL_BUSY_BAD_409S = (7834, 7366)  # 7043372, f93a270 (hunt)
REAL_BUSY_BAD_WRITES = (474, 1067)
REAL_QUIET_BAD_409S = (957, 2388, 2670)  # 7043372, f93a270 (make real); 7043372 (spread)
FACTOR = 2.0  # how far the model may land from the real figures
GOOD_CEILING = max(20, *REAL_GOOD_409S)  # a good build: as few 409s as the real ones


def within(value: float, real: tuple[int, ...] | int, factor: float = FACTOR) -> bool:
    values = real if isinstance(real, tuple) else (real,)
    return min(values) / factor <= value <= max(values) * factor


def sim(
    profile: SimProfile,
    seed: int = 0,
    slowdown: float = PROCS_BUSY_SLOWDOWN,
    node_lookup: Lookup = PROCS_NODE_LOOKUP,
) -> SimSummary:
    params = procs_params(seed=seed, slowdown=slowdown, node_lookup=node_lookup)
    return simulate(profile, params, Path(os.devnull))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_procs_sized_run_lands_near_the_real_hunt(seed: int) -> None:
    good, bad = sim(GOOD, seed=seed), sim(BAD, seed=seed)
    assert good.conflicts <= GOOD_CEILING and good.hwm < 100
    assert within(good.status_updates, REAL_GOOD_WRITES, 1.3)  # ~8,900: the lookups' pace
    assert within(bad.conflicts, REAL_BUSY_BAD_409S)
    assert within(bad.status_updates, REAL_BUSY_BAD_WRITES)
    assert bad.hwm == 100


def test_on_a_quiet_machine_the_bad_build_conflicts_far_less() -> None:
    bad = sim(BAD, slowdown=PROCS_QUIET_SLOWDOWN)
    good = sim(GOOD, slowdown=PROCS_QUIET_SLOWDOWN)
    assert within(bad.conflicts, REAL_QUIET_BAD_409S)
    assert good.conflicts <= GOOD_CEILING
    assert bad.conflicts > 10 * max(good.conflicts, 1)  # the builds still separate


def test_without_the_node_lookup_the_model_is_far_off() -> None:
    # The model before this calibration: tries not paced by the lookup (GET -> PATCH in
    # ~1 ms, retries 2-8 ms apart) make ~3.4x the real good writes and over 5x the real
    # bad 409s, whatever the dispatch slowdown.
    good, bad = sim(GOOD, node_lookup=()), sim(BAD, node_lookup=())
    assert not within(good.status_updates, REAL_GOOD_WRITES)
    assert not within(bad.conflicts, REAL_BUSY_BAD_409S, 5.0)


def test_the_lookup_mix_is_drawn_as_measured() -> None:
    draws = lookup_table(random.Random(3), 20_000, PROCS_NODE_LOOKUP)
    share = {s: sum(abs(d - s) < 0.1 for d in draws) / len(draws) for s in (0.0, 5.0, 10.0)}
    assert share[0.0] == pytest.approx(1 - 0.202 - 0.153, abs=0.02)
    assert share[5.0] == pytest.approx(0.202, abs=0.02)
    assert share[10.0] == pytest.approx(0.153, abs=0.02)


@pytest.mark.parametrize("lookup", [((5.0, 0.7), (10.0, 0.5)), ((-1.0, 0.1),), ((5.0, 1.5),)])
def test_an_impossible_lookup_mix_is_refused(lookup: Lookup) -> None:
    with pytest.raises(ValueError, match="node lookup"):
        check_lookup(lookup)


def test_the_procs_shaped_log_reads_back_as_the_summary_says(tmp_path: Path) -> None:
    # With lookups a try's GET and PATCH are apart by up to 10 s: two events, so the log
    # stays in time order (up to the usual request overlap, MAX_OVERLAP_S).
    log = tmp_path / "kube-apiserver.log"
    summary = simulate(BAD, procs_params(minutes=2.0), log)
    counts = read_log(log)
    assert counts.bad_lines == []
    assert counts.lines == summary.lines
    assert counts.node_patches == summary.node_patches > 0
    assert counts.conflicts == summary.conflicts > 0
    assert counts.node_writes == summary.node_writes
    assert counts.max_backstep_s < MAX_OVERLAP_S
