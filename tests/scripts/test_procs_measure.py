"""scripts/procs_measure.py: says what it does while its builds run, and leaves no worktree
registered in the user's checkout, over the procs backend's fake Kubernetes programs
(tests/helpers/fake_kube.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.procs_backend import ProcsWorld, fake_env, make_world
from tests.helpers.scripts import load_script


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcsWorld]:
    made = make_world(tmp_path)
    with fake_env(monkeypatch, made):
        yield made


def _argv(world: ProcsWorld) -> list[str]:
    config = world.root / "procs.toml"
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"', "[backends.procs]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in world.data().items()]
    config.write_text("\n".join(lines) + "\n")
    good, bad = world.repo.mainline[0], world.repo.mainline[3]
    return [
        "--repo", str(world.repo.path), "--config", str(config), "--run-dir", str(world.run_dir),
        "--warmup", "2s", f"{good}:good", f"{bad}:bad",
    ]  # fmt: skip


def _worktrees(world: ProcsWorld) -> list[str]:
    listed = subprocess.run(
        ["git", "worktree", "list"], cwd=world.repo.path, capture_output=True, text=True, check=True
    )
    return listed.stdout.splitlines()


@pytest.mark.slow
def test_it_says_each_step_before_it_runs_and_removes_its_worktrees(
    world: ProcsWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_script("procs_measure").main(_argv(world)) == 0
    out = capsys.readouterr().out
    good = world.repo.mainline[0][:12]
    # Before a cold setup and each cold build (minutes each), a line says what runs.
    setup = out.index("setup: etcd, and the harness (kubemark)")
    building = out.index(f"building {good} (a cold build takes minutes)")
    assert setup < building < out.index(f"built {good} in ")
    assert f"removing the worktrees under {world.run_dir / 'worktrees'}" in out
    assert len(_worktrees(world)) == 1  # the checkout's own, nothing registered by the run


def test_an_interrupted_run_leaves_no_worktree_either(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("procs_measure")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(script, "evaluate_candidate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        script.main(_argv(world))
    assert len(_worktrees(world)) == 1
    assert world.leftovers() == []


def test_a_skipped_run_is_said_as_a_skip_with_its_reason_not_as_a_side_of_the_threshold() -> None:
    reason = "launch: starting hollow nodes 75-99 failed (timed out after 30s)"
    line = load_script("procs_measure")._off_side(
        "1444d25", 1, {"value": None, "reason": reason}, "good"
    )
    assert line == f"1444d25 run 1: skipped ({reason}), expected good"


def test_a_measured_run_on_the_wrong_side_names_its_value_and_the_side() -> None:
    script = load_script("procs_measure")
    line = script._off_side("f93a270^", 2, {"value": 1243.0, "reason": ""}, "good")
    assert line == "f93a270^ run 2: 1243.0 (at or above the threshold, expected good)"
    line = script._off_side("f93a270", 1, {"value": 3.0, "reason": ""}, "bad")
    assert line == "f93a270 run 1: 3.0 (below the threshold, expected bad)"
