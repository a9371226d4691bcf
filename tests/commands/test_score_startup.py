"""What `bisector score LOG` starts besides scanning: no BLAS threads, the environment kept,
and none of the modules only runs or files beside a log need (a quicker start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import os, sys
from bisector.entry import main
sys.argv = ['bisector', 'score', sys.argv[1], '--json']
try:
    main()
except SystemExit:
    pass
print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)
print(*sorted(sys.modules), file=sys.stderr)
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
    threads, variable = done.stderr.splitlines()[-2].split()
    assert (threads, variable) == ("1", "None"), done.stderr


# The CLI's help texts name the backends from the registry, their one description, so
# bisector.backends.registry loads with the CLI: ~20 ms of a 0.31 s start, measured against
# a copy of the names: not listed. The report's model did too (backends.base named its
# Adaptation: 13-15 ms of every start, 5 December 2026) until Adaptation had its module.
_NOT_FOR_A_LOG = (
    "bisector.measure.early",
    "bisector.metrics.readings",
    "bisector.metrics.cl2",
    "bisector.report.model",
)


def test_scoring_a_log_imports_no_early_verdicts_or_evidence_reader(tmp_path: Path) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text(
        "I0602 05:51:00.000000       7 wrap.go:42] GET /api/v1/nodes/n1: (1.0ms) 200 [[k] a:1]\n"
    )
    run = [sys.executable, "-c", _PROBE, str(log)]
    done = subprocess.run(run, capture_output=True, text=True, check=False)
    loaded = set(done.stderr.splitlines()[-1].split())
    assert "bisector.logs.scanner" in loaded
    assert loaded.isdisjoint(_NOT_FOR_A_LOG), sorted(loaded.intersection(_NOT_FOR_A_LOG))
