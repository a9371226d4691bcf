"""scripts/bench_noise_cli.py: trials through the real CLI, and the regression it measures.

Before endpoints were measured again until their runs separate (commit 0258f7f, the
parent of d5e7871), one flipped endpoint run under `--error-rate` with a calibrated
threshold stopped the run: "the bad endpoint does not score worse than the good one".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.noisy_local import flips

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_noise_cli.py"
COMMITS, P = 32, 0.1
BEFORE = "0258f7f"  # the last commit whose endpoint check did not measure again
TRIAL = re.compile(
    r"^(?P<variant>\S+) +trial +(?P<seed>\d+): culprit +(?P<culprit>\d+) named +(?P<named>\S+) "
    r"(?P<right>right|WRONG) exit (?P<exit>\d+) (?P<status>\w+)(?P<confirmed> confirmed)?; "
    r"(?P<evals>\d+) evaluations, (?P<ep>\d+) endpoint runs \((?P<flips>\d+) flipped\), \d+s ?"
    r"(?P<error>.*)$"
)


def _one_endpoint_flip_seed() -> int:
    """The first trial seed whose first good run flips and first bad run does not
    (or the other way round): the noise the collect script will apply, computed here."""
    for seed in range(1000):
        if flips(seed, 0, 1, P) != flips(seed, COMMITS, 1, P):
            return seed
    raise AssertionError("no seed with one flipped endpoint run")


def _bench(seed: int, trials: int, *variants: str) -> tuple[list[dict[str, str]], str]:
    argv = [sys.executable, str(SCRIPT), "--trials", str(trials), "--commits", str(COMMITS)]
    argv += ["--seed", str(seed), "--variants", *variants]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    lines = [m.groupdict() for m in map(TRIAL.match, result.stdout.splitlines()) if m]
    return lines, result.stdout


@pytest.mark.slow
def test_two_trials_print_the_table_and_one_flipped_endpoint_run_costs_runs_not_the_search() -> (
    None
):
    seed = _one_endpoint_flip_seed()
    trials, out = _bench(seed, 2, "after")
    assert sorted(int(t["seed"]) for t in trials) == [seed, seed + 1]
    table = out.split("\n\n", 1)[1].splitlines()
    assert table[0].startswith(f"{COMMITS} commits, per-run flip p = {P}, --error-rate {P}")
    labels = [line[:26].strip() for line in table[2:]]
    assert labels == [
        "trials",
        "right culprit",
        "confirmed (exit 0)",
        "wrong and confirmed",
        "wrong, not confirmed",
        "aborted (error)",
        "trials w/ endpoint flip",
        "evaluations med / max",
        "endpoint runs total",
        "endpoint runs med / max",
        "wall time (s)",
    ]
    assert table[1].split() == ["after"] and table[2].split() == ["trials", "2"]
    flipped = next(t for t in trials if int(t["seed"]) == seed)
    assert flipped["flips"] == "1"  # the collect script flipped the run predicted here
    assert int(flipped["ep"]) > 2  # the endpoints were measured again ...
    assert flipped["right"] == "right" and flipped["named"] == flipped["culprit"]
    assert flipped["exit"] == "0" and flipped["confirmed"]  # ... and the search went on
    assert all(t["status"] != "aborted" for t in trials)


def _has_revision(rev: str) -> bool:
    probe = ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _has_revision(BEFORE), reason=f"revision {BEFORE} not in this clone")
def test_before_the_fix_the_same_trial_stopped_at_the_endpoints() -> None:
    seed = _one_endpoint_flip_seed()
    trials, _ = _bench(seed, 1, f"before:{BEFORE}")
    stopped = next(t for t in trials if int(t["seed"]) == seed)
    assert stopped["status"] == "aborted" and stopped["exit"] == "2"
    assert stopped["named"] == "-" and stopped["evals"] == "2"
    assert "the bad endpoint does not score worse than the good one" in stopped["error"]
