"""`bisector demo` shows early verdicts and prefetched builds on screen and in its report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.measure.journal import Measured, Prefetch, read_journal

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_stops_bad_warmups_early_and_uses_prefetched_builds(tmp_path: Path) -> None:
    where = tmp_path / "demo"
    argv = [sys.executable, "-m", "bisector", "demo", "--dir", str(where)]
    argv += ["--nodes", "3000", "--duration", "1m", "--prs", "16", "-v"]  # -v: builds ahead
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    screen = result.stdout + result.stderr
    # Counts as bisector.numbers writes them: whole, with thousands marked.
    line = r"stopped early: conflicts ([\d,]+) >= ([\d,.]+) after (\S+) of 1m00s"
    early = re.findall(line, screen)
    assert early, screen
    for value, threshold, _after in early:
        assert float(value.replace(",", "")) >= float(threshold.replace(",", ""))
    assert re.search(r"prefetched the build of [0-9a-f]{12} while a cluster ran", screen)
    assert re.search(r"using the prefetched build of [0-9a-f]{12}", screen)
    run = where / "run"
    report = json.loads((run / "report.json").read_text())
    stopped = [e for e in report["evaluations"] if e["stopped_early"]]
    assert len(stopped) == len(early)
    assert all(e["phase"] != "endpoint" for e in stopped)
    assert report["culprit"]["confirmed"] is True
    journal = read_journal(run / "journal.jsonl")
    assert any(isinstance(r, Prefetch) and r.error is None for r in journal)
    assert any(isinstance(r, Measured) and r.measurement.prefetched_build for r in journal)
