"""The cost model (bisector.cost) and `--dry-run`, which prints it: plain, noisy, parallel."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bisector.commands.run import dry_run
from bisector.cost import KUBEMARK_2017, Expected, Phases, SearchShape, cost, expected_search
from bisector.durations import format_duration
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

BENCH = Path(__file__).resolve().parents[1] / "scripts" / "bench_bisect.py"


def test_plain_git_bisect_one_slot() -> None:
    # 2 endpoints + ceil(log2 64) = 6 steps + 2 confirmations, one per round.
    assert expected_search(SearchShape(64)) == Expected(10, 10)
    # repeats 3: a majority of 3 plans 2 runs per commit.
    assert expected_search(SearchShape(1, repeats=2)) == Expected(8, 8)


def test_parallel_rounds_split_the_range_in_k_plus_one() -> None:
    # 95 commits, 2 slots: ceil(log3 95) = 5 rounds of 2; endpoints and confirmation 1 each.
    assert expected_search(SearchShape(95, parallel=2)) == Expected(2 + 10 + 2, 1 + 5 + 1)


def test_noise_costs_runs_by_the_channel_capacity() -> None:
    clean = expected_search(SearchShape(256, error_rate=0.0))
    noisy = expected_search(SearchShape(256, error_rate=0.1))
    noisier = expected_search(SearchShape(256, error_rate=0.2))
    assert clean.evaluations < noisy.evaluations < noisier.evaluations
    # (8 + log2(100) / 3) bits / (1 - H(0.1)) = 10.21 / 0.531 -> 20 search runs, +2 +2.
    assert noisy.evaluations == 24
    parallel = expected_search(SearchShape(256, error_rate=0.1, parallel=4))
    assert parallel.evaluations == noisy.evaluations and parallel.rounds < noisy.rounds / 3


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bisect", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_bisect"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("slots", [1, 2])
def test_the_plain_model_matches_what_bench_bisect_measures(slots: int) -> None:
    # The benchmark's trials run the real orchestrator on an in-memory history.
    bench = _bench()
    method = bench.Method(f"K={slots}", slots=slots)
    outcomes = [bench.run_trial(bench.Cell(64, "flip 0"), method, seed) for seed in range(6)]
    assert all(o.correct for o in outcomes)
    model = expected_search(SearchShape(64, parallel=slots))
    assert abs(statistics.median(o.evaluations for o in outcomes) - model.evaluations) <= 1
    assert abs(statistics.median(o.rounds for o in outcomes) - model.rounds) <= 1


def test_cost_of_phases_cluster_hours_and_money() -> None:
    phases = Phases(build_s=1800, launch_s=720, warmup_s=1800, collect_s=120, teardown_s=300)
    plain = cost(Expected(8, 8), phases, price_per_cluster_hour=10.0)
    assert plain.wall_s == 8 * (1800 + 2940)
    assert plain.cluster_s == 8 * 2940 and plain.money == round(8 * 2940 / 3600 * 10, 2)
    early = cost(Expected(8, 8), phases, bad_share=0.5, early_bad_s=360)
    assert early.cluster_s == 8 * (2940 - 0.5 * (1800 - 360))
    assert cost(Expected(8, 8), phases).money is None
    assert KUBEMARK_2017.evaluation_s == 79 * 60  # 30 + 12 + 30 + 2 + 5 minutes


def test_early_good_shortens_the_good_share_of_warmups_only() -> None:
    phases = Phases(build_s=1800, launch_s=720, warmup_s=1800, collect_s=120, teardown_s=300)
    plain = cost(Expected(8, 8), phases, bad_share=0.25)
    # Three quarters of the evaluations are good: their warmup lasts 600 s, not 1800 s.
    good = cost(Expected(8, 8), phases, bad_share=0.25, early_good_s=600)
    assert good.cluster_s == plain.cluster_s - 8 * 0.75 * (1800 - 600)
    assert good.wall_s == plain.wall_s - 8 * 0.75 * (1800 - 600)
    both = cost(Expected(8, 8), phases, bad_share=0.25, early_bad_s=300, early_good_s=600)
    assert both.cluster_s == 8 * (2940 - 0.75 * (1800 - 600) - 0.25 * (1800 - 300))
    # Capped at the warmup: an early good later than the warmup's end saves nothing.
    assert cost(Expected(8, 8), phases, bad_share=0.25, early_good_s=7200) == plain
    # Off (None) is the model without early good verdicts, whatever bad_share says.
    assert cost(Expected(8, 8), phases, bad_share=0.25, early_bad_s=300).cluster_s == (
        8 * (2940 - 0.25 * (1800 - 300))
    )


@pytest.mark.parametrize(
    ("flags", "mode"),
    [
        ({}, "git bisect, 1 slot"),
        ({"error_rate": 0.1}, "noise-aware search (error rate 0.1), 1 slot"),
        ({"likelihood": "metric"}, "noise-aware search (metric likelihood), 1 slot"),
        ({"parallel": 2}, "git bisect, 2 slots"),
        ({"error_rate": 0.1, "parallel": 3}, "noise-aware search (error rate 0.1), 3 slots"),
    ],
)
def test_dry_run_prints_the_cost_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: dict[str, Any], mode: str
) -> None:
    built = build_repo(tmp_path / "repo", [1] * 33)
    config = write_local_config(
        tmp_path / "cfg", run={"estimate": "1h19m", "price_per_cluster_hour": 12.5}
    ).config
    settings = settings_for(
        config, good=built.mainline[0], bad=built.mainline[-1], repo=built.path, **flags
    )
    assert dry_run(settings) == 0
    out = capsys.readouterr().out
    s = settings.search
    # `[run] revert_check` is on by default: the model counts the reverted bad endpoint.
    shape = SearchShape(
        32,
        error_rate=s.error_rate,
        likelihood=s.likelihood,
        parallel=s.parallel,
        revert_check=True,
    )
    expected = expected_search(shape)
    # warmup 0s in this config: the 1h19m are split as the 2017 job's other phases.
    phases = Phases(
        build_s=4740 * 30 / 49,
        launch_s=4740 * 12 / 49,
        collect_s=4740 * 2 / 49,
        teardown_s=4740 * 5 / 49,
    )
    costed = cost(expected, phases, price_per_cluster_hour=12.5)
    assert f"expected evaluations: {expected.evaluations} " in out
    assert f"search: {mode}; rounds: {expected.rounds}\n" in out
    assert f"estimated wall time: {format_duration(costed.wall_s)}\n" in out
    assert f"cluster-hours: {costed.cluster_hours:.1f}; cost: {costed.money:.2f} at 12.5" in out


@pytest.mark.slow
@pytest.mark.parametrize(("noise", "p"), [("flip 0.1", 0.1), ("flip 0.2", 0.2)])
def test_the_noisy_model_is_near_what_bench_bisect_measures(noise: str, p: float) -> None:
    bench = _bench()
    method = bench.Method("K=1", noise_aware=True)
    outcomes = [bench.run_trial(bench.Cell(64, noise), method, seed) for seed in range(8)]
    measured = statistics.median(o.evaluations for o in outcomes)
    model = expected_search(SearchShape(64, error_rate=p)).evaluations
    assert abs(model - measured) <= 0.25 * measured, (model, measured)


def test_the_eta_unit_is_the_cost_models_evaluation_time() -> None:
    from bisector.backends.registry import backend_info
    from bisector.cost import KUBEMARK_2017, evaluation_s, phases_for

    gce, local = backend_info("gce").phases, backend_info("local").phases
    assert evaluation_s(model=gce, warmup_s=1800.0, estimate_s=None) == (
        KUBEMARK_2017.evaluation_s  # the 2017 job's phases, warmup 30 min
    )
    given = evaluation_s(model=local, warmup_s=60.0, estimate_s=600.0)
    phases = phases_for(model=local, warmup_s=60.0, estimate_s=600.0)
    assert phases is not None and given == phases.evaluation_s
    assert given is not None and abs(given - 600.0) < 1e-6  # scaled to [run] estimate
    assert evaluation_s(model=local, warmup_s=60.0, estimate_s=None) is None


@pytest.mark.parametrize(("parallel", "builds", "share"), [(1, 2, 1.0), (2, 6, 1.0), (2, 3, 0.5)])
def test_dry_run_hides_the_builds_made_ahead_and_says_warmups_are_whole(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    parallel: int,
    builds: int,
    share: float,
) -> None:
    built = build_repo(tmp_path / "repo", [1] * 33)
    run = {"estimate": "1h19m", "prefetch_builds": builds, "check_every": "2m", "early_good": True}
    config = write_local_config(tmp_path / "cfg", run=run).config
    settings = settings_for(
        config, good=built.mainline[0], bad=built.mainline[-1], repo=built.path, parallel=parallel
    )
    assert dry_run(settings) == 0
    out = capsys.readouterr().out
    expected = expected_search(SearchShape(32, parallel=parallel, revert_check=True))
    phases = Phases(
        build_s=4740 * 30 / 49,
        launch_s=4740 * 12 / 49,
        collect_s=4740 * 2 / 49,
        teardown_s=4740 * 5 / 49,
    )
    ahead = cost(expected, phases, prefetch_hit=share)
    assert ahead.wall_s < cost(expected, phases).wall_s
    assert f"estimated wall time: {format_duration(ahead.wall_s)}\n" in out
    assert f"builds ahead ({builds}): {share:.0%} of builds hidden" in out
    assert "early bad and good verdicts on: warmups are counted whole here" in out


@pytest.mark.parametrize("slots", [1, 2])
def test_the_revert_check_costs_one_more_confirmation_like_measurement(slots: int) -> None:
    # Plain search, repeats 3 (a majority plans 2 runs): the revert's 2 runs in
    # ceil(2 / K) rounds, like one commit of the confirmation.
    without = expected_search(SearchShape(64, repeats=2, parallel=slots))
    with_it = expected_search(SearchShape(64, repeats=2, parallel=slots, revert_check=True))
    assert with_it.evaluations == without.evaluations + 2
    assert with_it.rounds == without.rounds + math.ceil(2 / slots)
    # A noise model confirms with one run each, and the revert with one.
    noisy = SearchShape(64, error_rate=0.1, parallel=slots)
    assert expected_search(dataclasses.replace(noisy, revert_check=True)) == Expected(
        expected_search(noisy).evaluations + 1, expected_search(noisy).rounds + 1
    )


def test_dry_run_says_the_revert_check_and_how_far_the_hunt_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [1] * 33)
    on = write_local_config(tmp_path / "on", run={"max_culprits": 2}).config
    off = write_local_config(tmp_path / "off", run={"revert_check": False}).config
    for config in (on, off):
        settings = settings_for(
            config, good=built.mainline[0], bad=built.mainline[-1], repo=built.path
        )
        assert dry_run(settings) == 0
    out = capsys.readouterr().out
    assert "(endpoints, search, confirm, revert check)" in out
    assert "revert check: the bad endpoint with the culprit reverted" in out
    assert "up to 2 culprits ([run] max_culprits" in out
    assert "revert check: off ([run] revert_check = false)" in out
