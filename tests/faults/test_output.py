"""`bisector run` whose output cannot be written: the run goes on, its code is its outcome.

`bisector run ... | head -1` (the reader gone before the summary), a full disk, a
closed terminal or closed descriptors: the progress lines and the final summary are
lost, never the run. Before, the final summary's EPIPE ended the run with click's exit
1 and ENOSPC with 2 ("bad input") after a whole bisection had been paid for.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.faults import FaultDriver, run_args
from tests.helpers.repo import build_repo

VALUES = [2, 2, 40, 40]
CULPRIT = 2


def _broken(how: str, fd: int) -> dict[str, object]:
    """subprocess arguments that hand the child a broken descriptor `fd`."""
    name = {1: "stdout", 2: "stderr"}[fd]
    if how == "epipe":  # the reader is gone before bisector writes a byte
        read, write = os.pipe()
        os.close(read)
        return {name: write}
    if how == "full":
        return {name: os.open("/dev/full", os.O_WRONLY)}
    return {"preexec_fn": lambda: os.close(fd)}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "fd"),
    [("epipe", 1), ("full", 1), ("epipe", 2), ("closed", 1), ("closed", 2)],
    ids=["stdout-epipe", "stdout-full", "stderr-epipe", "stdout-closed", "stderr-closed"],
)
def test_a_run_whose_output_fails_still_ends_with_its_outcome(
    tmp_path: Path, driver: FaultDriver, how: str, fd: int
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    kwargs = _broken(how, fd)
    other = "stderr" if fd == 1 else "stdout"
    done = subprocess.run(argv, check=False, **{other: subprocess.PIPE}, **kwargs)  # type: ignore[call-overload]
    said = done.stderr if fd == 1 else done.stdout
    assert done.returncode == RunExit.FOUND, said
    assert b"Traceback" not in said
    report = json.loads((run_dir / "report.json").read_text())
    assert report["culprit"]["commit"] == built.mainline[CULPRIT]
    assert driver.up() == []
