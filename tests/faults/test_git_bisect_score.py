"""`git bisect run bisector score LOG`: a truncated gzip log is a skip (125), never bad.

git reads exit codes 1-127 except 125 as *bad*, 125 as skip and anything else as
"abort" (git 2.39.5, `git help bisect`, section "Bisect run"). Every commit of
a 16-commit history carries its apiserver log as `kube-apiserver.log.gz`; the logs
of the good commits git would test first are cut in half (an upload or a copy that
stopped). Read as bad, they would make git name a commit before the real one.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.exitcodes import ScoreExit
from tests.helpers.local_backend import CONFLICT, WRITE, bisector_argv

CULPRIT = 12
TRUNCATED = range(1, CULPRIT - 1)  # good commits except the culprit's parent


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _log(conflicts: int) -> bytes:
    lines = [CONFLICT] * conflicts + [WRITE] * 3
    return gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0)


def _history(repo: Path) -> list[str]:
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Test User")
    _git(repo, "config", "user.email", "test@example.com")
    commits = []
    for i in range(16):
        data = _log(40 if i >= CULPRIT else 2)
        if i in TRUNCATED:
            data = data[: len(data) // 2]
        (repo / "kube-apiserver.log.gz").write_bytes(data)
        (repo / "serial").write_text(f"{i}\n")  # no two commits share a tree
        _git(repo, "add", "kube-apiserver.log.gz", "serial")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        commits.append(_git(repo, "rev-parse", "HEAD").strip())
    return commits


@pytest.mark.slow
def test_truncated_gzip_is_skipped_and_git_names_the_right_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commits = _history(repo)
    score = [*bisector_argv("score"), "kube-apiserver.log.gz", "--metric", "conflicts"]
    score += ["--threshold", "10"]
    _git(repo, "bisect", "start", commits[-1], commits[0])
    result = subprocess.run(
        ["git", "bisect", "run", *score], cwd=repo, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{commits[CULPRIT]} is the first bad commit" in result.stdout, result.stdout
    assert any(f"{commits[i]}" in result.stdout for i in TRUNCATED)  # the fault was met
    _git(repo, "bisect", "reset")
    _git(repo, "checkout", "-q", commits[1])
    direct = subprocess.run(score, cwd=repo, capture_output=True, text=True, check=False)
    assert "Traceback" not in direct.stderr
    assert direct.returncode == ScoreExit.NO_VERDICT, direct.stdout + direct.stderr


# Runs bisector with one of its standard streams broken, as `git bisect run` would start
# it from a script whose output went away: exits with bisector's own code (128 + N when a
# signal ended it, as git reports a child killed by a signal).
_BROKEN_STREAM = r"""
import os, subprocess, sys
how, stream, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
fd = {"stdout": 1, "stderr": 2, "stdin": 0}[stream]
kwargs = {}
if how == "epipe":  # a pipe whose reader is gone before bisector writes a byte
    read, write = os.pipe()
    os.close(read)
    kwargs[stream] = write
elif how == "full":  # the disk is full
    kwargs[stream] = os.open("/dev/full", os.O_WRONLY)
elif how == "closed":  # `>&-`, `2>&-`, `<&-`
    kwargs["preexec_fn"] = lambda: os.close(fd)
code = subprocess.run(cmd, check=False, **kwargs).returncode
sys.exit(code if code >= 0 else 128 - code)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "stream"),
    # The rest of the table (closed streams, every verdict) is tests/commands/test_score.py.
    [("epipe", "stdout"), ("full", "stdout"), ("epipe", "stderr"), ("closed", "stdout")],
)
def test_broken_output_never_changes_the_verdict_git_bisect_run_reads(
    tmp_path: Path, how: str, stream: str
) -> None:
    """`bisector score` on a good log exited 1 (click's answer to EPIPE) when its stdout's
    reader was gone, and git bisect run marked good commits bad and named the wrong
    commit; a full stdout was 128 (git stopped). Each verdict's code must reach git."""
    repo = tmp_path / "repo"
    commits = _history(repo)  # truncated logs too: a skip writes its reason to stderr
    runner = tmp_path / "broken_stream.py"
    runner.write_text(_BROKEN_STREAM)
    score = [*bisector_argv("score"), "kube-apiserver.log.gz", "--metric", "conflicts"]
    score += ["--threshold", "10"]
    _git(repo, "bisect", "start", commits[-1], commits[0])
    result = subprocess.run(
        ["git", "bisect", "run", sys.executable, str(runner), how, stream, *score],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{commits[CULPRIT]} is the first bad commit" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr
