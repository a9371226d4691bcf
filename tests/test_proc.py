from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bisector import proc
from tests.helpers.processes import gone, kill_recorded


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


def _wait_for(path: Path, seconds: float = 20.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def reap_daemons(tmp_path: Path) -> Iterator[Path]:
    """A directory where tests' daemons write their pids; whatever is still alive is killed."""
    pids = tmp_path / "pids"
    pids.mkdir()
    yield pids
    kill_recorded(pids)


def test_a_daemon_holding_stdout_does_not_delay_the_return(reap_daemons: Path) -> None:
    # The daemon leaves the group (setsid) and keeps our stdout and stderr open for
    # 120 s: a wait for EOF on a pipe would block that long.
    daemon = reap_daemons / "daemon"
    script = f"setsid bash -c 'echo $$ > {daemon}; exec sleep 120' & echo launched"
    start = time.monotonic()
    result = proc.run(["bash", "-c", script], timeout=60)
    assert time.monotonic() - start < 30
    assert result.stdout == "launched\n"
    assert not gone(int(_wait_for(daemon)), seconds=0.2), "the daemon is meant to live on"


def test_timeout_holds_when_a_daemon_keeps_the_output_open(reap_daemons: Path) -> None:
    daemon = reap_daemons / "daemon"
    script = f"setsid bash -c 'echo $$ > {daemon}; exec sleep 120' & echo started; sleep 100"
    start = time.monotonic()
    with pytest.raises(proc.CommandError) as info:
        proc.run(["bash", "-c", script], timeout=1)
    assert time.monotonic() - start < 30
    assert info.value.timed_out
    assert info.value.stdout == "started\n"  # what it printed before the deadline is kept


def test_timeout_kills_a_grandchild_in_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild"
    script = f"sleep 100 & echo $! > {pidfile}; wait"
    with pytest.raises(proc.CommandError, match="timed out after 1s"):
        proc.run(["bash", "-c", script], timeout=1)
    assert gone(int(_wait_for(pidfile))), "the grandchild outlived the timeout"


_INTERRUPTED_PARENT = """
import signal, sys
from pathlib import Path
from bisector import proc

def interrupt(signum, frame):  # what the run loop does with SIGTERM (search/runner.py)
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, interrupt)
pidfile = sys.argv[1]
try:
    proc.run(["bash", "-c", f"sleep 60 & echo $! > {pidfile}; sleep 60"])
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_waiting_kills_the_whole_group(
    tmp_path: Path, sig: signal.Signals
) -> None:
    pidfile = tmp_path / "grandchild"
    parent = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_PARENT, str(pidfile)],
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        grandchild = int(_wait_for(pidfile))
        parent.send_signal(sig)
        assert parent.wait(30) == 130
        # Killing only the shell would leave its background `sleep 60` running.
        assert gone(grandchild), "the grandchild outlived the interrupt"
    finally:
        parent.kill()
        parent.wait()


def test_output_is_kept_when_a_command_is_killed_by_a_signal() -> None:
    with pytest.raises(proc.CommandError) as info:
        proc.run(["bash", "-c", "echo last words >&2; kill -9 $$"])
    assert info.value.why == "was killed by SIGKILL"
    assert "last words" in str(info.value)


def test_the_error_message_keeps_the_error_not_the_whole_command() -> None:
    script = "echo compiling; " + "true; " * 60 + "echo 'fatal: missing object 1444d25' >&2; exit 2"
    with pytest.raises(proc.CommandError) as info:
        proc.run(["bash", "-c", script])
    message = str(info.value)
    assert message.endswith("exited with code 2: fatal: missing object 1444d25")
    assert len(message) < 200
    assert info.value.cmd[-1] == script  # the full command stays on the exception


def test_last_lines_keeps_whole_lines_from_the_end() -> None:
    text = "one\n\ntwo\nthree\n" + "x" * 50 + "\n"
    assert proc.last_lines(text, lines=3) == ["two", "three", "x" * 50]
    assert proc.last_lines(text, lines=3, chars=56) == ["three", "x" * 50]
    assert proc.last_lines("y" * 100, chars=10) == ["y" * 10]
    assert proc.last_lines("\n \n") == []


def test_log_keeps_every_command_as_its_own_block(tmp_path: Path) -> None:
    log = tmp_path / "evals" / "001" / "launch.log"
    proc.run(["bash", "-c", "echo up; echo warning >&2"], cwd=tmp_path, log=log)
    with pytest.raises(proc.CommandError):
        proc.run(["bash", "-c", "echo 'cluster did not come up' >&2; exit 3"], log=log)
    with pytest.raises(proc.CommandError):
        proc.run(["bash", "-c", "sleep 30"], timeout=0.5, log=log)
    with pytest.raises(proc.CommandError):
        proc.run(["no-such-program-bisector"], log=log)
    blocks = log.read_text().split("\n\n")
    assert blocks[-1] == ""
    first, second, third, fourth = blocks[:-1]
    assert first.splitlines()[0].endswith(f"$ cd {tmp_path} && bash -c 'echo up; echo warning >&2'")
    assert first.splitlines()[1:4] == ["up", "----- stderr", "warning"]
    assert re.fullmatch(r"===== exited with code 0 after \d+\.\ds", first.splitlines()[-1])
    assert "cluster did not come up" in second
    assert "exited with code 3 after" in second
    assert "timed out after 0.5s" in third
    assert "could not start" in fourth


def test_an_unwritable_log_does_not_fail_the_command(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert proc.run(["true"], log=tmp_path / "file" / "build.log").code == 0


def test_an_interrupt_inside_popen_still_finds_the_group(tmp_path: Path) -> None:
    # The fallback when Ctrl-C lands after the child started but before Popen
    # returned: groups led by our children that no `run` call knows are killed.
    pidfile = tmp_path / "grandchild"
    child = subprocess.Popen(
        ["bash", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], start_new_session=True
    )
    try:
        grandchild = int(_wait_for(pidfile))
        proc._kill_unknown_children()
        assert child.wait(10) == -signal.SIGKILL
        assert gone(grandchild)
    finally:
        child.kill()
        child.wait()
