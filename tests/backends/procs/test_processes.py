"""What /proc says of a process (bisector/backends/procs/processes.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from bisector.backends.procs import processes as pp
from tests.helpers.processes import gone


def test_a_process_gone_is_gone() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert gone(p.pid) and pp.cpu_seconds(p.pid) is None
    assert pp.cpu_seconds(os.getpid()) is not None and pp.peak_rss_bytes(os.getpid()) > 0
