"""A search run ended early as good, whose collected log cannot back it: a skip with its
reason, never good, never cached; the run still names the true culprit, confirmed.

Through `bisector run` with a `local` backend that can `peek` (tests/helpers/
shaped_local.py). Its log keeps its own clock, a minute per look, while the warmup
looks every 0.03 s: what a log must cover is read on the log's clock (the endpoints'
logs say how long a whole run's log is), never the warmup's alone. The first bisect
midpoint (the third evaluation) is good and ends early, after 6 of 10 looks; its
collected log is then struck:

- restart: the apiserver restarted after the last look; `kubectl logs` shows the new
  container only (hyperhq/kubernetes 7043372, pkg/kubectl/cmd/logs.go: `--previous`
  is needed for the old one's lines): one minute of the six watched.
- short: a log of four of the six minutes watched (a copy cut short).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import cached_ids, report, run_args, struck_measurements
from tests.helpers.repo import build_repo
from tests.helpers.shaped_local import BAD, write_shaped_config

VALUES = [20] * 6 + [BAD] * 2
CULPRIT = 6


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["restart", "short"])
def test_a_collected_log_covering_less_than_the_watched_time_is_a_skip(
    tmp_path: Path, fault: str
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    driver = write_shaped_config(tmp_path, warmup_s=0.3)
    try:
        driver.inject(fault, "call:3")
        run_dir = tmp_path / "run"
        argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert "Traceback" not in result.stderr
        (struck,) = struck_measurements(driver, run_dir)
        assert built.value(struck["commit"]) == 20 and struck["phase"] == "bisect"
        assert struck["value"] is None, struck
        assert struck["early_verdict"] is None and struck["stopped_early"] is None
        assert "log covers" in (struck["reason"] or ""), struck["reason"]
        assert struck["id"] not in cached_ids(built.path)
        shown = [e for e in report(run_dir)["evaluations"] if e["eval_dir"] == struck["eval_dir"]]
        assert [e["verdict"] for e in shown] == ["skip"]
        assert result.returncode == RunExit.FOUND, result.stderr
        assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout
        assert report(run_dir)["culprit"]["confirmed"] is True
        assert driver.up() == [] and driver.live_steps() == []
    finally:
        driver.kill_leftovers()
