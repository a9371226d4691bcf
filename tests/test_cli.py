from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LINE = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
)


def _bisector(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bisector", *args], capture_output=True, text=True, check=False
    )


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _bisector("score", str(tmp_path / "missing.log"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("bisector: error: ")


def test_usage_error_is_exit_2() -> None:
    result = _bisector("score", "--no-such-flag", "x")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_verdict_exit_codes(tmp_path: Path) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text(LINE * 3)
    assert _bisector("score", str(log), "--metric", "conflicts", "--threshold", "3").returncode == 1
    assert _bisector("score", str(log), "--metric", "conflicts", "--threshold", "4").returncode == 0
