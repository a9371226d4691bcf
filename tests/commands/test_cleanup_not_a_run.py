"""`bisector cleanup` in a directory that is not a run says so and fails (issue 29): a typo
in --run-dir must not read as "nothing left up"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bisector.bisection.layout import RunLayout
from bisector.exitcodes import CleanupExit


def _cleanup(where: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bisector", "cleanup", "--run-dir", str(where)],
        capture_output=True, text=True, check=False, cwd=cwd,
    )  # fmt: skip


def test_a_directory_that_is_not_a_run_is_one_line_and_non_zero(tmp_path: Path) -> None:
    elsewhere = tmp_path / "not-a-run"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("x")
    result = _cleanup(elsewhere, tmp_path)
    assert result.returncode == CleanupExit.USAGE
    assert result.stderr.count("\n") == 1, result.stderr
    assert "is not a bisector run directory" in result.stderr
    assert "nothing recorded" not in result.stdout


def test_the_default_directory_is_checked_too(tmp_path: Path) -> None:
    """No --run-dir means the current directory: run from a checkout, it is not a run."""
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "cleanup"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == CleanupExit.USAGE
    assert "is not a bisector run directory" in result.stderr


def test_a_run_with_only_its_journal_is_a_run(tmp_path: Path) -> None:
    """A run that never recorded a cluster still has its journal: nothing left, exit 0."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunLayout(run_dir).journal.write_text("")
    result = _cleanup(run_dir, tmp_path)
    assert result.returncode == CleanupExit.CLEAN, result.stderr
    assert "nothing recorded" in result.stdout
