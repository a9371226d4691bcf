"""The interrupt's kill of running commands spares teardowns, even one that has just
started and is not yet registered (it is marked in its environment)."""

from __future__ import annotations

import os
import subprocess
import time

from bisector import proc
from bisector.search.parallel import kill_running_commands


def test_a_marked_teardown_survives_the_kill_and_other_commands_do_not() -> None:
    env = {**os.environ, proc.PROTECTED_ENV: "1"}
    teardown = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    build = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert teardown.pid not in proc.PROTECTED_GROUPS  # not registered: only marked
        kill_running_commands()
        build.wait(timeout=10)
        time.sleep(0.2)
        assert build.returncode == -9
        assert teardown.poll() is None  # still running
    finally:
        for child in (teardown, build):
            child.kill()
            child.wait()


def test_protected_commands_carry_the_mark() -> None:
    with proc.protected():
        out = proc.run(["sh", "-c", f'echo "${proc.PROTECTED_ENV}"']).stdout
    assert out.strip() == "1"
    assert proc.run(["sh", "-c", f'echo "${proc.PROTECTED_ENV}"']).stdout.strip() == ""
