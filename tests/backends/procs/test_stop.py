"""Stopping a cluster (bisector/backends/procs/stop.py): every tagged process, then its
directory; nothing it did not make."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisector.backends.procs import stop as procs_stop


def _tagged_sleeper(tag: str, ready: Path, ignore_term: bool = False) -> subprocess.Popen[bytes]:
    """A process carrying `tag`; `ready` appears once its signal handling is in place."""
    code = "import signal,sys,time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "open(sys.argv[1], 'w').close()\ntime.sleep(60)\n"
    env = {**os.environ, procs_stop.TAG_ENV: tag}
    return subprocess.Popen([sys.executable, "-c", code, str(ready)], env=env)


def test_stop_ends_every_tagged_process_then_removes_the_directory(tmp_path: Path) -> None:
    tag = f"test-{os.getpid()}-{time.monotonic_ns()}"
    polite = _tagged_sleeper(tag, tmp_path / "polite")
    stubborn = _tagged_sleeper(tag, tmp_path / "stubborn", ignore_term=True)
    other = _tagged_sleeper(tag + "-other", tmp_path / "other")
    try:
        deadline = time.monotonic() + 30
        while not all((tmp_path / n).exists() for n in ("polite", "stubborn", "other")):
            assert time.monotonic() < deadline, "the sleepers did not start"
            time.sleep(0.05)
        (tmp_path / "root").mkdir()
        problems = procs_stop.stop_cluster(tag, [tmp_path / "root"], grace_s=0.5)
        polite.wait(5)
        stubborn.wait(5)
        assert problems == [] and not (tmp_path / "root").exists()
        assert stubborn.returncode == -signal.SIGKILL and polite.returncode == -signal.SIGTERM
        assert other.poll() is None  # another cluster's process is never touched
    finally:
        for p in (polite, stubborn, other):
            p.kill()
            p.wait()


def test_stop_leaves_alone_a_group_it_did_not_make(tmp_path: Path) -> None:
    """A tagged process inside another program's process group (a shell's, the test
    runner's): stop ends that process, never its group. Signalling the group ended the
    whole pytest run when `bisector cleanup` stopped a process a test had tagged."""
    tag = f"test-{os.getpid()}-{time.monotonic_ns()}"
    ready = tmp_path / "ready"
    sleeper = "import sys,time; open(sys.argv[1], 'w').close(); time.sleep(60)"
    # The group's leader is an untagged shell; its child carries the tag.
    leader = subprocess.Popen(
        ["bash", "-c", f'{procs_stop.TAG_ENV}={tag} "$0" -c "$1" "$2" & exec sleep 60',
         sys.executable, sleeper, str(ready)],
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline, "the tagged child did not start"
            time.sleep(0.05)
        assert procs_stop.stop_cluster(tag, grace_s=0.5) == []
        assert procs_stop.tagged(tag) == []
        with pytest.raises(subprocess.TimeoutExpired):  # the group's leader is not the cluster's
            leader.wait(timeout=1.0)
    finally:
        leader.kill()
        leader.wait()


def test_stop_as_a_command_says_what_is_left(tmp_path: Path) -> None:
    code = procs_stop.main(["--tag", "nothing-carries-this", "--remove", str(tmp_path / "x")])
    assert code == 0
