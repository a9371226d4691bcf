"""scripts/load_trust.py: counts every run of every test, failures by name, in a real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "load_trust.py"

_TESTS = """
import os
from pathlib import Path

def test_passes():
    pass

def test_fails_on_the_second_run():
    seen = Path(os.environ["SEEN"])
    runs = len(seen.read_text()) if seen.exists() else 0
    seen.write_text("x" * (runs + 1))
    assert runs != 1, "the second run"
"""


@pytest.mark.slow
def test_rounds_passes_and_failures_are_counted_by_test(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(_TESTS)
    env = {**os.environ, "SEEN": str(tmp_path / "seen")}
    where = ["--checkout", str(tmp_path), "--only", "tests/test_x.py"]
    settings = ["--rounds", "3", "--jobs", "1", "--burners", "1"]
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *where, *settings],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "rounds: 3, green: 2; test runs: 6, passed: 5, failed: 1" in out, out
    assert "1 x tests/test_x.py::test_fails_on_the_second_run" in out
    assert "round 2: 1 passed, 1 failed" in out
    assert "FAILED tests/test_x.py::test_fails_on_the_second_run: AssertionError: the second" in out
