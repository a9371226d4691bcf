"""The progress line: plain lines without a terminal, a live rich line on one; each
evaluation's phases, readings, builds ahead and the ticker (issue 29.1)."""

from __future__ import annotations

import io
import os
import re
import threading
import time
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.search.progress import PhaseStarted, Reading
from bisector.ui.progress_lines import LiveProgress, PlainProgress, logged_to, make_progress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import whole_range
from tests.helpers.repo import build_repo

# How long a start may take before it counts as blocked (a guard, not a timing).
GUARD_S = 30.0


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    progress = make_progress(estimate_s=600, stream=out, verbose=True)
    assert isinstance(progress, PlainProgress)
    progress.status("bisect: evaluating", "a" * 40, steps_left=3)
    progress.note("a is good")
    progress.stop()
    assert out.getvalue().splitlines() == [
        "bisector: bisect: evaluating | aaaaaaaaaaaa | ~3 runs left | ETA 30m00s",
        "bisector: a is good",
    ]


def test_by_default_one_line_per_evaluation_phases_and_details_only_with_verbose(
    tmp_path: Path,
) -> None:
    """The demo without a terminal printed 118 lines, 40 about prefetching and 32 with
    0.00s builds or launches, and buried its answer: by default the console says the
    evaluations and what the search concludes; -v adds the rest; the run directory's log
    always has it all."""
    console, verbose = io.StringIO(), io.StringIO()
    log = tmp_path / "progress.log"
    events = [
        ("status", "bisect: evaluating"),
        ("phase", "build"),
        ("detail", "using the prefetched build of bbbbbbbbbbbb"),
        ("phase", "launch"),
        ("phase", "warmup"),
        ("note", "bbbbbbbbbbbb bad: conflicts 3,927 >= 2,312, in 31s [bisect]"),
        ("detail", "bbbbbbbbbbbb is bad"),
    ]
    for stream, is_verbose in ((console, False), (verbose, True)):
        plain = make_progress(stream=stream, tick_s=3600, verbose=is_verbose)
        with logged_to(plain, log, None) as progress:
            for kind, text in events:
                if kind == "status":
                    progress.status(text, "b" * 40, steps_left=3)
                elif kind == "phase":
                    progress.phase(PhaseStarted(0, "b" * 40, text, expected_s=1))  # type: ignore[arg-type]
                elif kind == "detail":
                    progress.detail(text)
                else:
                    progress.note(text)
            progress.stop()
    assert console.getvalue().splitlines() == [
        "bisector: bbbbbbbbbbbb bad: conflicts 3,927 >= 2,312, in 31s [bisect]"
    ]
    said = verbose.getvalue()
    assert "bisect: evaluating | bbbbbbbbbbbb" in said and "warmup begins" in said
    assert "using the prefetched build" in said and "bbbbbbbbbbbb is bad" in said
    logged = log.read_text()  # both runs' lines: the log has everything either way
    assert logged.count("using the prefetched build") == 2
    assert logged.count("warmup begins") == 2


def test_the_run_directory_log_gets_every_event_timestamped_beside_the_console(
    tmp_path: Path,
) -> None:
    console = io.StringIO()
    log = tmp_path / "progress.log"
    with logged_to(PlainProgress(console), log, None) as progress:
        progress.note("a is good")
        progress.phase(PhaseStarted(0, "b" * 40, "warmup", expected_s=60))
        progress.stop()
    assert console.getvalue().splitlines() == [
        "bisector: a is good",
        "bisector: bbbbbbbbbbbb warmup begins (~1m00s expected)",
    ]
    lines = log.read_text().splitlines()
    assert [ln.split(" ", 1)[1] for ln in lines] == console.getvalue().splitlines()
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ln.split()[0]) for ln in lines)


def test_a_run_directory_log_that_cannot_be_written_costs_the_run_nothing(
    tmp_path: Path,
) -> None:
    console = io.StringIO()
    log = tmp_path / "missing" / "progress.log"
    with logged_to(PlainProgress(console), log, None) as p:
        p.note("still said")
        p.stop()
    said = console.getvalue().splitlines()
    assert said[-1] == "bisector: still said"
    assert said[:-1] == [
        f"bisector: {log} cannot be written ([Errno 2] No such file or "
        f"directory: '{log}'): progress goes to the console only"
    ]


@pytest.mark.parametrize("reader", [False, True])
def test_a_named_pipe_in_place_of_the_run_directory_log_neither_blocks_nor_is_written(
    tmp_path: Path, reader: bool
) -> None:
    # The adversarial pass of 4 December 2026: `mkfifo progress.log` in a run directory
    # and `bisector run` never started (open(2) of a FIFO for writing waits for a reader,
    # fifo(7)), holding the run directory's lock; with a reader, each line would wait on it.
    log = tmp_path / "progress.log"
    os.mkfifo(log)
    held = os.open(log, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    console = io.StringIO()
    done = threading.Event()

    def start() -> None:
        with logged_to(PlainProgress(console), log, None) as p:
            p.note("still said")
            p.stop()
        done.set()

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    try:
        finished = done.wait(GUARD_S)
    finally:  # before the fix the thread waits in open(): a reader lets it go
        release = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
        thread.join(GUARD_S)
        for fd in (held, release):
            if fd is not None:
                os.close(fd)
    assert finished, "logged_to blocked on a named pipe"
    said = console.getvalue().splitlines()
    assert said[-1] == "bisector: still said" and "cannot be written" in said[0], said


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_under_the_run_directory_log_raises_nothing_into_the_run() -> None:
    console = io.StringIO()
    with logged_to(PlainProgress(console), Path("/dev/full"), None) as p:  # ENOSPC each write
        p.note("still said")
        p.stop()
    assert console.getvalue() == "bisector: still said\n"


def test_live_display_updates_phase_candidate_steps_and_eta() -> None:
    progress = LiveProgress(estimate_s=60)
    progress.status("confirm", "b" * 40, steps_left=2)
    status = progress.line.text()
    progress.stop()
    assert "confirm | bbbbbbbbbbbb | ~2 runs left | ETA 2m00s" in status


# -- live phases (issue 29.1) ------------------------------------------------------------


C = "3f2a1b9c8d7e" + "0" * 28
P = "4a5b6c7d8e9f" + "0" * 28


def _wait_for(condition: object, what: str) -> None:
    """Until `condition()` holds (a thread's output): a bound against a hang, not a timing."""
    deadline = time.monotonic() + 30
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_plain_says_each_phase_as_it_begins_with_its_expected_time() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, tick_s=3600)
    progress.prefetching(P, True)
    progress.phase(PhaseStarted(0, C, "build", expected_s=70))
    progress.phase(PhaseStarted(0, C, "launch", started=1000.0))
    progress.phase(PhaseStarted(0, C, "ready", started=1045.0))
    progress.phase(PhaseStarted(0, C, "warmup", expected_s=300))
    progress.stop()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(
        "bisector: 3f2a1b9c8d7e build begins (~1m10s expected) | prefetching 4a5b6c7d8e9f (build "
    )
    assert lines[1].startswith("bisector: 3f2a1b9c8d7e launch begins (build took ")
    assert lines[2].startswith("bisector: 3f2a1b9c8d7e ready: launch took 45s | ")
    assert lines[3].startswith("bisector: 3f2a1b9c8d7e warmup begins (~5m00s expected) | ")


def test_plain_ticks_during_a_long_phase_and_not_after_stop() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, tick_s=0.01)  # injectable: once a minute by default
    progress.phase(PhaseStarted(0, C, "warmup", expected_s=300))
    progress.reading(0, Reading("conflicts", 742, 77, 30, 300))
    _wait_for(lambda: "conflicts 742 >= 77: bad after 30s" in out.getvalue(), out.getvalue())
    ticked = [ln for ln in out.getvalue().splitlines() if "bad after 30s" in ln]
    assert ticked[0].startswith("bisector: 3f2a1b9c8d7e warmup ")
    progress.stop()
    assert progress._ticker is not None and not progress._ticker.is_alive()
    said = out.getvalue()
    time.sleep(0.05)  # several tick intervals: none may print
    assert out.getvalue() == said
    # A run reusing the progress (a resumed run in one process) gets its ticker again.
    progress.phase(PhaseStarted(0, P, "launch"))
    _wait_for(lambda: out.getvalue().count("4a5b6c7d8e9f launch") > 1, out.getvalue())
    progress.stop()


def test_plain_tick_is_once_a_minute_by_default() -> None:
    assert PlainProgress(io.StringIO()).tick_s == 60.0
    assert make_progress(stream=io.StringIO()).tick_s == 60.0  # type: ignore[attr-defined]


def test_parallel_slots_each_show_their_phase() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, tick_s=0.01)
    progress.phase(PhaseStarted(0, C, "warmup"))
    progress.phase(PhaseStarted(1, P, "build"))

    def tick() -> str | None:
        lines = out.getvalue().splitlines()
        return next((ln for ln in lines if "slot 1" in ln and "slot 0" in ln), None)

    _wait_for(tick, out.getvalue())  # one tick line, each slot joined
    progress.stop()
    said = tick()
    assert said is not None
    assert out.getvalue().splitlines()[1].startswith("bisector: slot 1: 4a5b6c7d8e9f build")
    assert "slot 0: 3f2a1b9c8d7e warmup" in said and "slot 1: 4a5b6c7d8e9f build" in said


def test_the_live_line_computes_elapsed_when_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])  # read by progress.py
    progress = LiveProgress()
    try:
        progress.status("bisect: evaluating", C, steps_left=3, eta_s=600)
        progress.phase(PhaseStarted(0, C, "warmup", expected_s=300, started=100.0))
        progress.reading(0, Reading("conflicts", 742, 77, 30, 300))
        progress.prefetching(P, True)
        clock[0] = 130.0
        first = progress.line.text()
        clock[0] = 190.0
        later = progress.line.text()  # nothing said meanwhile: the line moves by itself
    finally:
        progress.stop()
    assert "bisect: evaluating | 3f2a1b9c8d7e | ~3 runs left | ETA 10m00s" in first
    assert "3f2a1b9c8d7e warmup 30s of ~5m00s: conflicts 742 >= 77: bad after 30s" in first
    assert "prefetching 4a5b6c7d8e9f (build 30s)" in first
    assert "warmup 1m30s of ~5m00s" in later and "(build 1m30s)" in later


def test_an_interrupted_run_stops_the_ticker(tmp_path: Path) -> None:
    class Interrupting(FileValueBackend):
        def warmup(self, candidate: Candidate) -> None:
            raise KeyboardInterrupt

    built = build_repo(tmp_path / "repo", [1, 1, 9, 9])
    settings = whole_range(tmp_path, built, threshold=5.0)
    out = io.StringIO()
    progress = PlainProgress(out, tick_s=0.01)
    with pytest.raises(KeyboardInterrupt):
        run_bisection(settings, backend=Interrupting(), progress=progress)
    assert progress._ticker is not None and not progress._ticker.is_alive()
    said = out.getvalue()
    assert "build" in said
    time.sleep(0.05)  # several tick intervals: none may print
    assert out.getvalue() == said
    assert not [t for t in threading.enumerate() if t.name == "progress-tick"]


def test_a_tick_says_the_slots_only_once_their_last_line_is_a_tick_old() -> None:
    progress = PlainProgress(io.StringIO(), tick_s=3600)
    progress.phase(PhaseStarted(0, C, "warmup", started=100.0))
    progress.phase(PhaseStarted(1, P, "build", started=130.0))
    board = progress.board
    assert board.due(145.0, 60) == []  # just said at the phase changes
    said = board.due(160.0, 60)  # slot 0's line is a minute old: both, side by side
    assert said == ["slot 0: 3f2a1b9c8d7e warmup 1m00s", "slot 1: 4a5b6c7d8e9f build 30s"]
    assert board.due(200.0, 60) == []
    progress.stop()
