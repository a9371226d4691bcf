"""A CI job history whose runs test first-parent commits of a demo repository, and its config.

`demo_ci_runs(demo)` makes one CI run per mainline merge: a few good runs
(conflicts ~50) up to two merges before the culprit's PR, then bad runs
(conflicts ~500) from the merge after it on, so the nightly's range is
`fp[good]..fp[bad]` around the culprit's merge. `nightly_config(...)` writes a
nightly.toml bisecting that range with the sim backend at 5,000 hollow nodes
for a short simulated time (the lag runs away above ~4,300 nodes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git

from bisector.sim.demo_repo import PROFILE_PATH, DemoRepo
from tests.helpers.ci_history import CiRun

GOOD_CONFLICTS = (44, 52, 47, 58, 50, 61)
BAD_CONFLICTS = (520, 490, 610, 560, 580, 530)
SIM_DURATION = "20s"
SIM_RAMP = "5s"
ROOT = Path(__file__).resolve().parents[2]


def first_parent(demo: DemoRepo) -> list[str]:
    """Mainline commits, oldest first."""
    out = git.Repo(demo.path).git.rev_list("--first-parent", "--reverse", demo.bad)
    return str(out).split()


def demo_ci_runs(demo: DemoRepo, *, first_run: int = 100) -> tuple[list[CiRun], str, str]:
    """CI runs over the demo's mainline; returns (runs, last good commit, first bad commit)."""
    mainline = first_parent(demo)
    merge = mainline.index(demo.culprit_merge)
    unbuildable = set(demo.unbuildable)
    good = [c for c in mainline[1 : merge - 1] if c not in unbuildable]
    bad = [c for c in mainline[merge + 1 :] if c not in unbuildable]
    runs = [
        CiRun(first_run + k, commit, conflicts=GOOD_CONFLICTS[k % len(GOOD_CONFLICTS)])
        for k, commit in enumerate(good)
    ]
    runs += [
        CiRun(first_run + len(good) + k, commit, conflicts=BAD_CONFLICTS[k % len(BAD_CONFLICTS)])
        for k, commit in enumerate(bad)
    ]
    return runs, good[-1], bad[0]


def nightly_config(
    path: Path,
    *,
    bucket: str,
    job: str,
    repo: Path | None,
    state: Path,
    budget: str = "",
    upload: str | None = None,
    seed: int = 2,
) -> Path:
    """Write a nightly.toml for one job; `repo=None` gives it no backend."""
    lines = [
        "[nightly]",
        f'state = "{state}"',
        *([f'upload = "{upload}"'] if upload else []),
        "",
        "[[nightly.jobs]]",
        f'job = "{job}"',
        f'bucket = "{bucket}"',
        'metric = "conflicts"',
        *([f"budget = {{ {budget} }}"] if budget else []),
    ]
    if repo is not None:
        lines += [
            f'repo = "{repo}"',
            "[nightly.jobs.run]",
            'backend = "sim"',
            f'warmup = "{SIM_DURATION}"',
            "[nightly.jobs.backends.sim]",
            f'profile = "{PROFILE_PATH}"',
            "nodes = 5000",
            f'ramp = "{SIM_RAMP}"',
            f"seed = {seed}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def nightly_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "bisector", "nightly", "--config", str(config)]


def cli_env() -> dict[str, str]:
    """The inherited environment (STORAGE_EMULATOR_HOST included) with this tree importable."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def run_cli(config: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m bisector nightly --config CONFIG` as a real process; never raises on its code."""
    return subprocess.run(
        nightly_argv(config),
        check=False,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=timeout,
    )
