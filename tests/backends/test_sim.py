from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.registry import create_backend
from bisector.backends.sim import SimBackend
from bisector.config import Section, load_config
from bisector.errors import BuildError, CollectError, ConfigError
from bisector.sim import SimProfile, render_profile
from tests.helpers.sim_log import read_log

COMMIT = "f93a270edcefc3780247ae89eea02cd13b81237b"


def make_backend(tmp_path: Path, warmup_s: float = 30.0, **section: object) -> SimBackend:
    data = {"nodes": 200, "ramp": "5s", **section}
    context = BackendContext(
        section=Section(data, "bisector.toml", "backends.sim"),
        run_dir=tmp_path / "run",
        warmup_s=warmup_s,
        seed=4,
    )
    backend = create_backend("sim", context)
    assert isinstance(backend, SimBackend)
    return backend


def candidate(tmp_path: Path, profile: str | None, name: str = "eval-1") -> Candidate:
    tree = tmp_path / "tree"
    (tree / "hack").mkdir(parents=True, exist_ok=True)
    if profile is not None:
        (tree / "hack" / "kubemark-sim.toml").write_text(profile)
    return Candidate(commit=COMMIT, worktree=tree, eval_dir=tmp_path / "run" / name)


def evaluate(backend: SimBackend, cand: Candidate) -> list[Path]:
    backend.build(cand)
    backend.launch(cand)
    try:
        backend.warmup(cand)
        return backend.collect(cand)
    finally:
        backend.teardown(cand)


def test_registered_as_sim(tmp_path: Path) -> None:
    context = BackendContext(Section({"nodes": 10, "duration": "1m"}), tmp_path)
    assert isinstance(create_backend("sim", context), SimBackend)


def test_evaluation_writes_the_apiserver_log(tmp_path: Path) -> None:
    backend = make_backend(tmp_path)
    cand = candidate(tmp_path, render_profile(SimProfile()))
    logs = evaluate(backend, cand)
    assert logs == [cand.log_dir / "kube-apiserver.log"]
    counts = read_log(logs[0])
    assert counts.bad_lines == [] and counts.node_patches > 0
    summary = json.loads((cand.eval_dir / "sim-summary.json").read_text())
    assert summary["conflicts"] == counts.conflicts
    assert summary["duration_s"] == 30.0  # the run's warmup is the simulated time
    assert f"kubernetes/{COMMIT[:7]}" in logs[0].read_text()
    assert not (cand.eval_dir / "sim-master").exists()


def test_profile_in_the_tree_decides_the_outcome(tmp_path: Path) -> None:
    slow = SimProfile(dispatch_per_watcher_us=2000.0)
    backend = make_backend(tmp_path, warmup_s=60.0)
    good = evaluate(backend, candidate(tmp_path, render_profile(slow), "good"))

    bad = evaluate(
        backend, candidate(tmp_path, render_profile(replace(slow, trigger_index=False)), "bad")
    )
    assert read_log(bad[0]).conflicts > 100 * max(read_log(good[0]).conflicts, 1)


@pytest.mark.parametrize("profile", [None, "trigger_index = maybe\n", "incoming_capacity = -3\n"])
def test_missing_or_invalid_profile_is_a_build_failure(tmp_path: Path, profile: str | None) -> None:
    backend = make_backend(tmp_path)
    with pytest.raises(BuildError, match=r"kubemark-sim\.toml"):
        backend.build(candidate(tmp_path, profile))


def test_profile_path_is_configurable(tmp_path: Path) -> None:
    backend = make_backend(tmp_path, profile="sim/profile.toml")
    cand = candidate(tmp_path, render_profile(SimProfile()))
    with pytest.raises(BuildError, match=r"sim/profile\.toml"):
        backend.build(cand)
    (cand.worktree / "sim").mkdir()
    (cand.worktree / "sim" / "profile.toml").write_text("trigger_index = true\n")
    backend.build(cand)


def test_collect_without_a_run_is_a_collect_error(tmp_path: Path) -> None:
    backend = make_backend(tmp_path)
    cand = candidate(tmp_path, render_profile(SimProfile()))
    backend.build(cand)
    backend.launch(cand)
    with pytest.raises(CollectError):
        backend.collect(cand)


@pytest.mark.parametrize(
    ("section", "warmup", "message"),
    [
        ({"nodse": 3}, 30.0, "not a known setting"),
        ({"nodes": 0}, 30.0, "nodes` must be at least 1, got 0"),
        ({"status_period": "0s"}, 30.0, "status_period` must be more than 0s"),
        ({}, 0.0, "set `duration`"),
        ({"noise": -1}, 30.0, "noise"),
        ({"duration": "soon"}, 30.0, "duration"),
        # Past any real use, each broke a run after it started: 1e9 nodes filled memory,
        # a noise of 1000 overflowed exp() mid-run (internal error, exit 70), 1e20 watchers
        # read 0 conflicts at both endpoints.
        ({"nodes": 10**9}, 30.0, "nodes` must be at most 100,000"),
        ({"noise": 1000}, 30.0, "noise` must be at most 2"),
        ({"watchers": 10**20}, 30.0, "watchers` must be at most 1,048,576"),
    ],
)
def test_bad_settings_are_config_errors(
    tmp_path: Path, section: dict[str, object], warmup: float, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        make_backend(tmp_path, warmup_s=warmup, **section)


def test_plan_describes_the_run(tmp_path: Path) -> None:
    context = BackendContext(
        section=Section({"nodes": 1234, "duration": "5m"}, "b.toml", "backends.sim"),
        run_dir=tmp_path,
    )
    backend = SimBackend(context)
    plan = "\n".join(backend.plan(candidate(tmp_path, None)))
    assert "1234 hollow nodes" in plan and "5m00s" in plan
    assert "hack/kubemark-sim.toml" in plan


def test_seed_differs_per_evaluation_but_is_reproducible(tmp_path: Path) -> None:
    backend = make_backend(tmp_path)
    one, two = candidate(tmp_path, None, "eval-1"), candidate(tmp_path, None, "eval-2")
    assert backend.run_seed(one) != backend.run_seed(two)
    assert backend.run_seed(one) == make_backend(tmp_path).run_seed(one)


def test_default_config_selects_a_working_sim_backend(tmp_path: Path) -> None:
    root = load_config(Path(__file__).parents[2] / "configs" / "default.toml")
    run = root.table("run")
    assert run.get_str("backend") == "sim" and run.get_str("metric") == "conflicts"
    section = root.table("backends").table("sim")
    context = BackendContext(section=section, run_dir=tmp_path, warmup_s=run.get_duration("warmup"))
    backend = create_backend(run.get_str("backend"), context)
    assert isinstance(backend, SimBackend)
    assert backend.profile_path == "hack/kubemark-sim.toml"
    assert backend.duration_s == 300.0 and backend.nodes == 5000


# -- early verdicts: the model's log so far (PartialLogs) ----------------------------


def test_the_model_in_steps_writes_the_same_log_as_in_one_go(tmp_path: Path) -> None:
    backend = make_backend(tmp_path, warmup_s=40.0, noise=0.2)
    profile = render_profile(SimProfile(trigger_index=False))
    whole = evaluate(backend, candidate(tmp_path, profile, "whole"))[0]
    stepped = candidate(tmp_path, profile, "whole")  # same eval dir name: same seed
    stepped = replace(stepped, eval_dir=tmp_path / "stepped" / "whole")
    backend.build(stepped)
    backend.launch(stepped)
    sizes = []
    elapsed = []
    for t in backend.warmup_steps(stepped, 7.0):
        elapsed.append(t)
        sizes.append(backend.peek(stepped)[0].stat().st_size)
    logs = backend.collect(stepped)
    backend.teardown(stepped)
    assert elapsed == [7.0, 14.0, 21.0, 28.0, 35.0, 40.0]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]  # the log grows step by step
    assert logs[0].read_bytes() == whole.read_bytes()


def test_peek_shows_the_log_so_far_and_collect_ends_the_run_there(tmp_path: Path) -> None:
    backend = make_backend(tmp_path, warmup_s=60.0)
    cand = candidate(tmp_path, render_profile(SimProfile(trigger_index=False)))
    backend.build(cand)
    backend.launch(cand)
    with pytest.raises(CollectError):
        backend.peek(cand)  # nothing runs yet
    steps = backend.warmup_steps(cand, 10.0)
    assert next(steps) == 10.0
    peeked = read_log(backend.peek(cand)[0])
    assert next(steps) == 20.0
    later = read_log(backend.peek(cand)[0])
    assert 0 < peeked.node_patches < later.node_patches  # the log grows, counts only grow
    assert peeked.conflicts <= later.conflicts
    steps.close()  # the caller stops the warmup early
    logs = backend.collect(cand)
    backend.teardown(cand)
    counts = read_log(logs[0])
    assert counts.bad_lines == [] and counts.node_patches == later.node_patches
    summary = json.loads((cand.eval_dir / "sim-summary.json").read_text())
    assert summary["duration_s"] == 20.0 and summary["conflicts"] == counts.conflicts


def test_teardown_mid_warmup_closes_the_run(tmp_path: Path) -> None:
    backend = make_backend(tmp_path, warmup_s=30.0)
    cand = candidate(tmp_path, render_profile(SimProfile()))
    backend.build(cand)
    backend.launch(cand)
    next(backend.warmup_steps(cand, 10.0))
    backend.teardown(cand)  # e.g. an interrupt during the warmup
    assert not (cand.eval_dir / "sim-master").exists()


# -- prefetched builds --------------------------------------------------------------


def test_a_prefetched_build_is_used_by_the_build_of_that_commit(tmp_path: Path) -> None:
    backend = make_backend(tmp_path)
    ahead = tmp_path / "prefetch"
    (ahead / "hack").mkdir(parents=True)
    (ahead / "hack" / "kubemark-sim.toml").write_text(render_profile(SimProfile()))
    backend.prefetch_build(COMMIT, ahead)
    assert backend.prefetched(COMMIT)
    cand = candidate(tmp_path, None)  # its own checkout has no profile: only the prefetch does
    backend.build(cand)
    assert not backend.prefetched(COMMIT)  # taken
    backend.launch(cand)
    backend.warmup(cand)
    assert backend.collect(cand)[0].is_file()
    backend.teardown(cand)


def test_a_failed_prefetch_leaves_the_build_to_fail_as_a_skip(tmp_path: Path) -> None:
    backend = make_backend(tmp_path)
    ahead = tmp_path / "prefetch"
    ahead.mkdir()
    with pytest.raises(BuildError):
        backend.prefetch_build(COMMIT, ahead)
    assert not backend.prefetched(COMMIT)
    with pytest.raises(BuildError):
        backend.build(candidate(tmp_path, None))


def test_a_procs_sized_cluster_is_run_settings(tmp_path: Path) -> None:
    backend = make_backend(tmp_path, watchers=16000, status_period="1s", npd=False)
    params = backend.params(candidate(tmp_path, render_profile(SimProfile())))
    assert (params.extra_watchers, params.status_period_s, params.npd) == (16000, 1.0, False)
    assert backend.params(candidate(tmp_path, None, "e2")).extra_watchers == 16000
    with pytest.raises(ConfigError, match="watchers` must be at least 0, got -1"):
        make_backend(tmp_path, watchers=-1)
