"""The demo history and the sim backend together: plain `git bisect run` finds the planted commit.

(`bisector demo` will drive the same through the orchestrator, with --first-parent
and the descent into the PR; this checks the history and the backend alone.)
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import git
import pytest

from bisector.sim.demo_repo import create_demo_repo

pytestmark = pytest.mark.slow

CHECK = textwrap.dedent(
    """
    import subprocess, sys, tempfile
    from pathlib import Path
    sys.excepthook = lambda *info: sys.exit(128)  # a crash aborts the bisection, never "bad"
    from bisector.backends.base import BackendContext, Candidate
    from bisector.backends.sim import SimBackend
    from bisector.config import Section
    from bisector.errors import BuildError
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        section = Section({"nodes": 5000, "duration": "75s", "ramp": "30s"})
        backend = SimBackend(BackendContext(section=section, run_dir=Path(tmp)))
        cand = Candidate(commit=head.strip(), worktree=Path.cwd(), eval_dir=Path(tmp) / "e")
        try:
            backend.build(cand)
        except BuildError:
            sys.exit(125)
        backend.launch(cand)
        backend.warmup(cand)
        log = backend.collect(cand)[0]
        conflicts = sum(") 409 [[" in line for line in log.open(encoding="utf-8"))
        sys.exit(0 if conflicts < 3000 else 1)
    """
)


def test_git_bisect_with_the_sim_backend_names_the_planted_commit(tmp_path: Path) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=16)
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    repo = git.Repo(demo.path)
    repo.git.bisect("start", demo.bad, demo.good)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = repo.git.bisect("run", sys.executable, str(script), env=env)
    assert f"{demo.culprit} is the first bad commit" in out
