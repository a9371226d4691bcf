"""What `bisector score` starts besides scanning: no BLAS threads, the environment kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import os, sys
from bisector.cli import main
sys.argv = ['bisector', 'score', sys.argv[1], '--json']
try:
    main()
except SystemExit:
    pass
print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_score_starts_no_blas_threads_and_leaves_the_environment_as_it_was(
    tmp_path: Path,
) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text(
        "I0602 05:51:00.000000       7 wrap.go:42] GET /api/v1/nodes/n1: (1.0ms) 200 [[k] a:1]\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = [sys.executable, "-c", _PROBE, str(log)]
    done = subprocess.run(run, capture_output=True, text=True, env=env, check=False)
    threads, variable = done.stderr.split()[-2:]
    assert (threads, variable) == ("1", "None"), done.stderr
