from __future__ import annotations

import time
from pathlib import Path

import pytest

from bisector import proc


def test_run_returns_code_and_output(tmp_path: Path) -> None:
    result = proc.run(["bash", "-c", "echo out; echo err >&2; pwd"], cwd=tmp_path)
    assert result.code == 0
    assert result.stdout.splitlines() == ["out", str(tmp_path)]
    assert result.stderr == "err\n"


def test_env_is_added_to_the_environment() -> None:
    result = proc.run(["bash", "-c", 'echo "$BISECTOR_X:${HOME:+home}"'], env={"BISECTOR_X": "1"})
    assert result.stdout.strip() == "1:home"


def test_failure_raises_with_command_and_output() -> None:
    with pytest.raises(proc.CommandError) as info:
        proc.run(["bash", "-c", "echo boom >&2; exit 3"])
    assert info.value.code == 3
    assert info.value.cmd == ["bash", "-c", "echo boom >&2; exit 3"]
    assert "boom" in str(info.value)


def test_unchecked_failure_returns_code() -> None:
    assert proc.run(["bash", "-c", "exit 4"], check=False).code == 4


def test_missing_program_is_a_command_error() -> None:
    with pytest.raises(proc.CommandError) as info:
        proc.run(["no-such-program-bisector"])
    assert info.value.code is None
    assert "could not start" in str(info.value)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    script = f"(sleep 2; touch {marker}) & sleep 30"
    start = time.monotonic()
    with pytest.raises(proc.CommandError) as info:
        proc.run(["bash", "-c", script], timeout=0.5)
    assert info.value.timed_out
    assert time.monotonic() - start < 10
    time.sleep(2.5)
    assert not marker.exists(), "a grandchild outlived the timeout"


def test_stdin_is_passed() -> None:
    assert proc.run(["cat"], stdin="hello").stdout == "hello"
