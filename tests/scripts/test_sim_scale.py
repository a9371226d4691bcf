"""scripts/sim_scale.py: the sim-vs-real table, with real runs in procs_measure.py's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sim_scale.py"


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(SCRIPT), *args]
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=120
    )


def test_table_puts_real_runs_beside_the_model(tmp_path: Path) -> None:
    # The shape `procs_measure.py --json` writes (scripts/procs_measure.py _summary).
    runs = [
        {"rev": "f93a270^", "expect": "good", "runs": [{"conflicts": 3}, {"conflicts": 1}]},
        {"rev": "f93a270", "expect": "bad", "runs": [{"conflicts": 40}, {"conflicts": None}]},
    ]
    (tmp_path / "scale-2000.json").write_text(json.dumps(runs))
    (tmp_path / "scale-5000.json").write_text("{ not json")
    result = run_script(
        "--watchers", "2000,16000", "--seeds", "1", "--minutes", "1", "--real", str(tmp_path),
        "--real-point", "16000:bad:7834", "--real-point", "16000:bad:7366",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = {line.split("|")[1].strip(): line.split("|") for line in result.stdout.splitlines()
            if line.startswith("| ") and line[2].isdigit()}  # fmt: skip
    assert rows["2,000"][2].strip() == "2 (1-3)" and rows["2,000"][3].strip() == "40"
    assert rows["16,000"][2].strip() == "-" and rows["16,000"][3].strip() == "7600 (7366-7834)"
    assert "skipping" in result.stdout and "scale-5000.json" in result.stdout


def test_a_malformed_real_point_is_one_line(tmp_path: Path) -> None:
    result = run_script("--watchers", "0", "--seeds", "1", "--real-point", "16000:ugly:3")
    assert result.returncode == 2
    assert "write WATCHERS:good:409S" in result.stderr and "Traceback" not in result.stderr
