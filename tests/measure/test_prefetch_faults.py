"""Prefetched builds when the infrastructure fails: a build ahead is a guess, so whatever
goes wrong with it is journaled and said, never a traceback, never a verdict, and the
prefetch worktrees it used stay usable."""

from __future__ import annotations

import io
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.errors import LaunchError
from bisector.measure.journal import Measured, Prefetch, read_journal
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import PrefetchingBackend
from tests.helpers.inprocess import bisect_built
from tests.helpers.local_backend import write_local_config
from tests.helpers.processes import gone, kill_listed, listed
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

MISSING = range(2, 7)  # mainline commits whose checkout fails: objects missing


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo, input=stdin, check=True, capture_output=True)
    return done.stdout.decode().strip()


def _lose_objects(repo: Path, commits: list[str]) -> None:
    """Delete the blob only each of `commits` has (its `serial`), as a damaged repository
    or a mirror lacking objects would (tests/test_gitrepo.py: such a checkout is a skip)."""
    objects = repo / ".git" / "objects"
    for pack in list((objects / "pack").glob("*.pack")):
        data = pack.read_bytes()
        pack.unlink()
        pack.with_suffix(".idx").unlink()
        _git(repo, "unpack-objects", "-q", stdin=data)
    for commit in commits:
        blob = _git(repo, "rev-parse", f"{commit}:serial")
        (objects / blob[:2] / blob[2:]).unlink()


def test_a_prefetch_whose_checkout_fails_is_journaled_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [40] * 8)  # serials 2-6: no value
    lost = [built.mainline[i] for i in MISSING]
    _lose_objects(built.path, lost)
    backend = PrefetchingBackend()
    report, out = bisect_built(
        tmp_path,
        built,
        backend,
        threshold=10.0,
        prefetch_builds=2,
    )
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert report.confirmed
    journal = read_journal(Path(report.run_dir) / "journal.jsonl")
    failed = [r for r in journal if isinstance(r, Prefetch) and r.error]
    assert failed, "no prefetch of a commit with missing objects was tried: scenario broken"
    assert {r.commit for r in failed} <= set(lost)
    assert all("objects are missing" in (r.error or "") for r in failed)
    for f in failed:
        assert f"prefetched build of {f.commit[:12]} failed" in out
    for record in journal:
        if isinstance(record, Measured) and record.measurement.commit in lost:
            m = record.measurement
            assert m.value is None and m.reason is not None
    assert "Traceback" not in capsys.readouterr().err
    # The prefetch worktrees were given back: later prefetches found one free.
    ok = [r for r in journal if isinstance(r, Prefetch) and r.error is None]
    later = [r for r in journal[journal.index(failed[0]) :] if r in ok]
    assert later, "no prefetch succeeded after the failed one"


class BuildingAheadBackend(PrefetchingBackend):
    """Builds ahead with a real command (`sleep`, a 30-minute make as far as the run
    knows), each started once the run was interrupted in a launch: the race of a build
    ahead that was between two commands when the interrupt's kill came."""

    def __init__(self, pids: Path) -> None:
        super().__init__()
        self.pids = pids
        self.started = threading.Event()
        self.interrupted = threading.Event()
        self.tried = threading.Event()

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        self.started.set()
        if not self.interrupted.wait(10):
            return
        time.sleep(0.2)  # after the interrupt's first kill of the commands running
        self.tried.set()  # its bash may be killed before it says its pid: both are right
        script = f"echo $$ >> {self.pids}; exec sleep 30"
        proc.run(["bash", "-c", script], cwd=self.pids.parent)  # e.g. a build container

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        if self.started.wait(2):  # a build ahead is under way (the endpoints' give one)
            self.interrupted.set()
            raise KeyboardInterrupt  # Ctrl-C while the cluster starts


def test_an_interrupt_in_a_launch_leaves_no_build_ahead_running(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [40] * 8)
    pids = tmp_path / "pids"
    backend = BuildingAheadBackend(pids)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
        prefetch_builds=2,
    )
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
        interrupted = [c for step, c in backend.steps if step == "launch"][-1]
        assert ("teardown", interrupted) in backend.steps  # the cluster still went down
        # The build ahead tried its command after the interrupt (the race); whatever of it
        # started is gone (a loaded machine may kill its bash before it wrote its pid).
        assert backend.tried.wait(10), "no build ahead started: the race was not exercised"
        time.sleep(0.5)  # a build ahead started late would be running by now
        assert all(gone(p, 0.5) for p in listed(pids))
    finally:
        kill_listed(pids)


class FlakyLaunch(PrefetchingBackend):
    """Every commit's first launch fails (a cluster that did not come up): retried."""

    def __init__(self) -> None:
        super().__init__()
        self.tried: set[str] = set()

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        if candidate.commit not in self.tried:
            self.tried.add(candidate.commit)
            raise LaunchError("hollow nodes not ready after 5m")


def test_launch_retries_while_builds_ahead_run(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [40] * 8)
    backend = FlakyLaunch()
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
        prefetch_builds=2,
    )
    report = run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert report.confirmed
    firsts = {e.commit: e for e in reversed(report.evaluations)}  # each commit's first run
    assert all(e.launch_attempts == 2 and e.value is not None for e in firsts.values())
    assert all(e.value is not None for e in report.evaluations)
    assert backend.cache_hits, "no prefetched build was used"
    # Each failed attempt was torn down before the retry, and each evaluation at its end.
    launches = [c for step, c in backend.steps if step == "launch"]
    assert len(launches) == sum(e.launch_attempts for e in report.evaluations)
    teardowns = [c for step, c in backend.steps if step == "teardown"]
    assert sorted(launches) == sorted(teardowns)
    # One build ahead per prefetch worktree at a time, whatever the retries.
    assert len(backend.prefetch_calls) <= 2 * len(report.evaluations)
