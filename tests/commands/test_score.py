"""`bisector score`: exit codes (git bisect run's), JSON and table output, flags, config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.cli import main
from tests.logs.lines import header, mix_log, request, text

LINE = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["score", *args])
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "kube-apiserver.log"
    path.write_text(LINE * 3)
    return path


def test_verdict_exit_codes(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    assert _run(capsys, str(log), "--metric", "conflicts", "--threshold", "3")[0] == 1
    code, out, _ = _run(capsys, str(log), "--metric", "conflicts", "--threshold", "4")
    assert code == 0
    assert "verdict: good (conflicts = 3 < 4)" in out


def test_no_data_is_skip_never_good(
    capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, str(log), "--metric", "dispatch_lag_s", "--threshold", "1e9")
    assert code == 125
    assert "skip" in out
    v2 = tmp_path / "v2.log"
    v2.write_text(header(0) + "Starting watch for /api/v1/nodes\n")
    assert _run(capsys, str(v2), "--metric", "conflicts", "--threshold", "1")[0] == 125
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert _run(capsys, str(empty), "--metric", "conflicts", "--threshold", "1")[0] == 125


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "conflictz", "--threshold", "1"], "unknown metric"),
        (["--threshold", "1"], "--threshold needs --metric"),
        (["--metric", "conflicts", "--threshold", "nan"], "must be a finite number"),
        (["--since", "five minutes"], "--since: cannot read"),
        (["--since", "10m", "--until", "5m"], "must be later"),
        (["--config", "/nonexistent/bisector.toml"], "does not exist"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], log: Path, args: list[str], message: str
) -> None:
    code, _, err = _run(capsys, str(log), *args)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("bisector: error: ")


def test_bad_input_is_one_line_and_exit_2_in_a_real_process(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "score", str(tmp_path / "missing.log")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("bisector: error: ")


def test_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--no-such-flag", "x")
    assert code == 2
    assert "Traceback" not in err


def test_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(mix_log("v119")))
    code, out, _ = _run(capsys, str(path), "--json", "--metric", "conflicts", "--threshold", "3")
    doc = json.loads(out)
    assert code == 1
    assert doc["verdict"] == "bad"
    assert doc["value"] == 3.0
    assert doc["metrics"]["conflicts"] == 3
    assert doc["metrics"]["node_writes"] == 4
    assert set(doc["metrics"]) >= {"cacher_hwm", "dispatch_lag_s", "lines", "window"}


def test_since_until_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(600)]
    path.write_bytes(text(lines))
    code, out, _ = _run(capsys, str(path), "--since", "1m", "--until", "5m", "--json")
    assert code == 0
    assert json.loads(out)["metrics"]["conflicts"] == 240


def test_config_adds_request_metrics(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(mix_log("wrap47")))
    config = tmp_path / "bisector.toml"
    config.write_text(
        '[metrics.pod_conflicts]\nverb = "PATCH"\npath = "/pods/"\nstatuses = [409]\n'
    )
    args = ["--config", str(config), "--metric", "pod_conflicts", "--threshold", "1"]
    code, out, _ = _run(capsys, str(path), *args)
    assert code == 1
    assert "pod_conflicts" in out
    config.write_text(
        '[metrics.pod_conflicts]\nverb = "PATCH"\npath = "/pods/"\nstatuses = "409"\n'
    )
    code, _, err = _run(capsys, str(path), *args)
    assert code == 2
    assert "bisector.toml" in err and "statuses" in err


def test_sample_log_shipped_with_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[2] / "bisector" / "data" / "sample-kube-apiserver.log"
    code, out, _ = _run(
        capsys, str(sample), "--json", "--metric", "conflicts", "--threshold", "500"
    )
    metrics = json.loads(out)["metrics"]
    assert code == 0
    assert metrics["conflicts"] == 175  # the 504's quoted "PATCH ... 409" is not one
    assert metrics["node_writes"] == 1625
    assert metrics["cacher_hwm"] == {"*api.Node": 100}


def test_window_on_stdin_starts_at_the_first_line_read() -> None:
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(120)]
    result = subprocess.run(
        [sys.executable, "-m", "bisector", "score", "-", "--since", "30s", "--json"],
        input=text(lines),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["conflicts"] == 90
