"""Teardowns that always finish (bisector/measure/teardown.py): journaled when done, a
failure journaled and said with the cleanup command, an abandoned slot torn down."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

from bisector import proc
from bisector.backends.base import Candidate
from bisector.errors import InfraError
from bisector.measure.journal import Cleaned, Journal, TeardownFailed, read_journal
from bisector.measure.teardown import Teardowns
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.processes import gone


class Backend(FileValueBackend):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.seen_tearing_down: list[bool] = []
        self.teardowns: Teardowns | None = None

    def teardown(self, candidate: Candidate) -> None:
        assert self.teardowns is not None
        self.seen_tearing_down.append(self.teardowns.is_tearing_down(candidate.slot))
        super().teardown(candidate)
        if self.fail:
            raise InfraError("gcloud compute instances delete failed")


def _teardowns(tmp_path: Path, backend: Backend) -> tuple[Teardowns, Journal, io.StringIO]:
    journal = Journal(tmp_path / "journal.jsonl", tmp_path / "cache.jsonl", "f")
    out = io.StringIO()
    teardowns = Teardowns(
        backend=backend,
        journal=journal,
        progress=PlainProgress(out),
        lock=threading.RLock(),
        run_dir=tmp_path,
    )
    backend.teardowns = teardowns
    return teardowns, journal, out


def _candidate(tmp_path: Path, slot: int = 1) -> Candidate:
    return Candidate("c" * 40, tmp_path, tmp_path / "evals" / "001", slot)


def test_a_teardown_that_succeeds_is_journaled_as_cleaned(tmp_path: Path) -> None:
    backend = Backend()
    teardowns, journal, _ = _teardowns(tmp_path, backend)
    candidate = _candidate(tmp_path)
    teardowns.now(candidate)
    records = read_journal(journal.path)
    assert [r for r in records if isinstance(r, Cleaned)] == [Cleaned(str(candidate.eval_dir))]
    assert backend.seen_tearing_down == [True]  # an interrupt waits for this slot
    assert not teardowns.is_tearing_down(candidate.slot)


def test_a_failed_teardown_is_journaled_and_names_the_cleanup_command(tmp_path: Path) -> None:
    backend = Backend(fail=True)
    teardowns, journal, out = _teardowns(tmp_path, backend)
    teardowns.now(_candidate(tmp_path))
    records = read_journal(journal.path)
    assert not [r for r in records if isinstance(r, Cleaned)]
    failed = [r for r in records if isinstance(r, TeardownFailed)]
    assert [f.error for f in failed] == ["gcloud compute instances delete failed"]
    assert f"bisector cleanup --run-dir {tmp_path}" in out.getvalue()


def test_an_abandoned_slot_is_torn_down_once_and_leaves_the_flight(tmp_path: Path) -> None:
    backend = Backend()
    teardowns, _, _ = _teardowns(tmp_path, backend)
    candidate = _candidate(tmp_path, slot=2)
    teardowns.in_flight[2] = candidate
    assert teardowns.commits_in_flight() == {candidate.commit}
    teardowns.abandon(2)
    teardowns.abandon(2)  # a second call finds nothing in flight
    assert backend.steps.count(("teardown", candidate.commit)) == 1
    assert teardowns.commits_in_flight() == set()


def _daemon(tmp_path: Path, launch_id: str) -> int:
    """A daemon a launch's command started with setsid (it leaves the command's group)."""
    pidfile = tmp_path / f"daemon-{launch_id}"
    script = f"setsid bash -c 'echo $$ > {pidfile}; exec sleep 300' >/dev/null 2>&1 &"
    proc.run(["bash", "-c", script], env={"BISECTOR_LAUNCH_ID": launch_id}, timeout=60)
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the daemon never started"
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_a_daemon_the_launch_left_is_stopped_after_its_teardown(tmp_path: Path) -> None:
    """A local launch whose script started a daemon with setsid (out of its process group)
    left it running through every later measurement and after the run ended (one per
    launch, 7 in a 7-evaluation run): what still carries the launch's id is stopped."""
    backend = Backend()
    teardowns, _, out = _teardowns(tmp_path, backend)
    mine = _daemon(tmp_path, "launch-1")
    other = _daemon(tmp_path, "launch-2")  # another slot's cluster: not this teardown's
    try:
        teardowns.now(replace(_candidate(tmp_path), launch_id="launch-1"))
        assert gone(mine)
        os.kill(other, 0)  # still running: raises ProcessLookupError if it was stopped
        assert f"stopped process {mine} (sleep)" in out.getvalue()
    finally:
        for pid in (mine, other):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
