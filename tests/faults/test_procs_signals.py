"""`bisector run` with the procs backend (over the fake Kubernetes programs) interrupted
in each phase: SIGINT, SIGTERM and SIGHUP stop it with exit 130 and leave nothing running;
kill -9 leaves the cluster up, and `bisector cleanup` (resources.json) stops it all."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import wait_for
from tests.helpers.procs_backend import ProcsWorld, fake_env, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcsWorld]:
    made = make_world(tmp_path)
    with fake_env(monkeypatch, made):
        yield made


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _config(world: ProcsWorld, warmup: str) -> Path:
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"', f'warmup = "{warmup}"',
             "launch_attempts = 1", "", "[backends.procs]"]  # fmt: skip
    lines += [f"{k} = {_toml(v)}" for k, v in world.data(stop_grace="2s").items()]
    path = world.root / "procs.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _argv(world: ProcsWorld, config: Path) -> list[str]:
    repo = world.repo
    return [sys.executable, "-m", "bisector", "run", "--repo", str(repo.path), "--config",
            str(config), "--good", repo.mainline[0], "--bad", repo.mainline[-1],
            "--run-dir", str(world.run_dir)]  # fmt: skip


def _evals(world: ProcsWorld, pattern: str) -> list[Path]:
    return sorted((world.run_dir / "evals").glob(pattern)) if world.run_dir.exists() else []


PHASES = {
    # phase: (fault, a file that says the run is there)
    "build": ({"FAKE_GO_DELAY": "60"}, "go-calls"),
    "launch": ({"FAKE_KUBEMARK_DELAY": "60"}, "*/cluster/hollow-nodes/hollow-node-2.log"),
    "warmup": ({}, "*/logs/metrics-before.prom"),
}


def _start_in(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch, phase: str
) -> subprocess.Popen[str]:
    fault, marker = PHASES[phase]
    for key, value in fault.items():
        monkeypatch.setenv(key, value)
    calls = world.root / "go-calls"
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    argv = _argv(world, _config(world, "60s"))
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def there() -> bool:
        if phase == "build":
            return calls.exists() and "./cmd/kube-apiserver" in calls.read_text()
        return bool(_evals(world, marker))

    try:
        wait_for(there, timeout=90, what=f"the {phase} phase")
    except AssertionError:
        process.kill()
        process.communicate()
        raise
    return process


@pytest.mark.slow
@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_signal_in_a_phase_stops_the_run_and_leaves_nothing(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch, phase: str, signum: signal.Signals
) -> None:
    process = _start_in(world, monkeypatch, phase)
    process.send_signal(signum)
    _out, err = process.communicate(timeout=120)
    assert process.returncode == RunExit.INTERRUPTED, err
    assert "Traceback" not in err
    assert world.leftovers() == []


@pytest.mark.slow
def test_kill_9_in_the_warmup_leaves_the_cluster_to_cleanup(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = _start_in(world, monkeypatch, "warmup")
    process.kill()
    process.communicate()
    left = world.leftovers()
    assert any(item.startswith("pid ") for item in left)  # kill -9: nothing ran after it
    assert any(item.startswith("record procs/slot-0/") for item in left)  # one per launch
    cleanup = subprocess.run(
        [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(world.run_dir)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "bisector.backends.procs.stop --tag" in cleanup.stdout
    assert world.leftovers() == []
