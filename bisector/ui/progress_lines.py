"""Progress: a live line on a terminal (rich), plain log lines otherwise.

`steps_left` counts the runs still to come, the one starting now included: the
search's own estimate, then the descent into a merge, the confirmation runs and the
safety net of early good verdicts (bisector.bisection.pipeline). The ETA is given by
the evaluator (bisector.cost.MeasuredPhases: this run's measured phase times, the cost
model's guesses until then); without one, that many evaluations of `estimate_s`.

During an evaluation each slot's phase is shown as it begins (`PhaseStarted`, from
bisector.measure.evaluation), with its elapsed time against the expected one and,
during a watched warmup, the last look's reading (`Reading`, from
bisector.measure.early); builds ahead are shown beside it. On a terminal the line is
re-rendered by rich's own refresh, so the elapsed times move while a phase runs;
without one, a line every `tick_s` during a phase (a log that says nothing for the
length of a warmup reads as a hang).

By default the run says one line per evaluation (the evaluator's: commit, verdict,
value, time) and what the search concludes; the phase changes, the search's progress
lines and the details (builds ahead) only with `verbose` (`-v`), and always in the
run directory's log.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from bisector.durations import format_duration
from bisector.search.progress import Phase, PhaseStarted, Progress, Reading

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

# Without a terminal, a line at least this often while a phase runs (a nohup log that
# says nothing for 9 minutes reads as a hang).
TICK_S = 60.0


@dataclass
class _Slot:
    event: PhaseStarted
    reading: Reading | None = None
    # The phase before this one in the slot's evaluation, and how long it took.
    before: tuple[Phase, float] | None = None
    said_at: float = 0.0  # when a plain line last said this slot (monotonic)


class _Board:
    """What runs now: each slot's phase and reading, the builds ahead (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots: dict[int, _Slot] = {}
        self.prefetches: dict[str, float] = {}  # commit -> monotonic start
        self.many_slots = False

    def begin(self, event: PhaseStarted) -> None:
        with self.lock:
            was = self.slots.get(event.slot)
            before = None
            if was is not None and was.event.commit == event.commit:
                before = (was.event.phase, event.started - was.event.started)
            self.slots[event.slot] = _Slot(event, before=before, said_at=event.started)
            self.many_slots = self.many_slots or len(self.slots) > 1 or event.slot > 0

    def read(self, slot: int, reading: Reading) -> None:
        with self.lock:
            if slot in self.slots:
                self.slots[slot].reading = reading

    def end(self, slot: int) -> None:
        with self.lock:
            self.slots.pop(slot, None)

    def prefetch(self, commit: str, running: bool) -> None:
        with self.lock:
            if running:
                self.prefetches[commit] = time.monotonic()
            else:
                self.prefetches.pop(commit, None)

    def change_line(self, slot: int) -> str | None:
        """A phase begins: what it is, how long the one before took, what is expected."""
        with self.lock:
            state = self.slots.get(slot)
            if state is None:
                return None
            e = state.event
            label = f"slot {e.slot}: " if self.many_slots else ""
            took = ""
            if state.before is not None and state.before[0] != "ready":
                took = f"{state.before[0]} took {format_duration(state.before[1])}"
            if e.phase == "ready":
                return f"{label}{e.commit[:12]} ready: {took or 'launched'}"
            said = [took] if took else []
            if e.expected_s:
                said.append(f"~{format_duration(e.expected_s)} expected")
            why = f" ({'; '.join(said)})" if said else ""
            return f"{label}{e.commit[:12]} {e.phase} begins{why}"

    def lines(self, now: float) -> list[str]:
        with self.lock:
            out = [self._describe(self.slots[s], now) for s in sorted(self.slots)]
            if self.prefetches:
                out.append(self._prefetches(now))
            return out

    def due(self, now: float, every_s: float) -> list[str]:
        """Every slot's line, once one has not been said for `every_s` (joined, so the
        slots stay side by side); none before."""
        with self.lock:
            if not any(now - state.said_at >= every_s for state in self.slots.values()):
                return []
            for state in self.slots.values():
                state.said_at = now
        return self.lines(now)

    def prefetch_line(self, now: float) -> str:
        with self.lock:
            return self._prefetches(now) if self.prefetches else ""

    def _prefetches(self, now: float) -> str:
        return ", ".join(
            f"prefetching {commit[:12]} (build {format_duration(now - began)})"
            for commit, began in self.prefetches.items()
        )

    def _describe(self, state: _Slot, now: float) -> str:
        e = state.event
        label = f"slot {e.slot}: " if self.many_slots else ""
        if e.phase == "ready":
            return f"{label}{e.commit[:12]} ready"
        took = format_duration(now - e.started)
        expected = f" of ~{format_duration(e.expected_s)}" if e.expected_s else ""
        line = f"{label}{e.commit[:12]} {e.phase} {took}{expected}"
        if e.phase == "warmup" and state.reading is not None:
            line += f": {state.reading.describe()}"
        return line


class Stream(Protocol):
    """Where plain lines go: a text file or stderr."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class _OnBoard:
    """What both renderers do alike: the slots' state kept on a `_Board`, details said
    only when verbose."""

    board: _Board
    verbose: bool

    def note(self, line: str) -> None:
        raise NotImplementedError

    def detail(self, line: str) -> None:
        if self.verbose:
            self.note(line)

    def reading(self, slot: int, reading: Reading) -> None:
        self.board.read(slot, reading)

    def evaluated(self, slot: int) -> None:
        self.board.end(slot)

    def prefetching(self, commit: str, running: bool) -> None:
        self.board.prefetch(commit, running)


class PlainProgress(_OnBoard):
    """One line per event on stderr (CI logs, pipes, nohup): each phase as it begins, and
    every `tick_s` while one runs (a small thread, started with the first phase; `stop`
    ends it, and it says nothing after that: a later phase, a run reusing this progress,
    starts another)."""

    def __init__(
        self,
        stream: Stream | None = None,
        estimate_s: float | None = None,
        tick_s: float = TICK_S,
        *,
        stamped: bool = False,
        verbose: bool = True,
    ) -> None:
        self.stream = stream or sys.stderr
        self.stamped = stamped  # each line begins with its UTC time (a file read later)
        self.verbose = verbose  # the phase changes, the search's progress and details too
        self.estimate_s = estimate_s
        self.tick_s = tick_s
        self.board = _Board()
        self._out = threading.Lock()
        self._stopped = threading.Event()  # the current ticker's
        self._ticker: threading.Thread | None = None

    def status(
        self,
        phase: str,
        candidate: str = "",
        steps_left: int | None = None,
        eta_s: float | None = None,
    ) -> None:
        if self.verbose:
            self.note(_describe(phase, candidate, steps_left, eta_s, self.estimate_s))

    def note(self, line: str) -> None:
        with self._out:
            self._print(line)

    def _print(self, line: str) -> None:
        stamp = f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%M:%SZ} " if self.stamped else ""
        print(f"{stamp}bisector: {line}", file=self.stream, flush=True)

    def phase(self, event: PhaseStarted) -> None:
        self.board.begin(event)
        line = self.board.change_line(event.slot) if self.verbose else None
        if line is not None:
            ahead = self.board.prefetch_line(time.monotonic())
            self.note(f"{line} | {ahead}" if ahead else line)
        self._start_ticker()

    def _start_ticker(self) -> None:
        with self._out:
            if self._ticker is not None and not self._stopped.is_set():
                return
            self._stopped = stopped = threading.Event()
            self._ticker = threading.Thread(
                target=self._tick, args=(stopped,), name="progress-tick", daemon=True
            )
            self._ticker.start()

    def _tick(self, stopped: threading.Event) -> None:
        # Woken four times a tick: a slot is said again within `tick_s` of its last line.
        while not stopped.wait(self.tick_s / 4):
            lines = self.board.due(time.monotonic(), self.tick_s * 3 / 4)
            with self._out:
                if lines and not stopped.is_set():  # nothing once stop() has begun
                    self._print(" | ".join(lines))

    def stop(self) -> None:
        """Stop the ticker (every exit path: the run's own finally); it says nothing more."""
        with self._out:
            self._stopped.set()
            ticker = self._ticker
            self.board = _Board()  # what ran is over
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join(timeout=5.0)


class _Line:
    """The live line, rendered afresh at each of rich's refreshes (the elapsed times move)."""

    def __init__(self, board: _Board) -> None:
        self.board = board
        self.head = "starting"
        self.started = time.monotonic()

    def text(self) -> str:
        now = time.monotonic()
        elapsed = format_duration(now - self.started)
        rows = [f"{self.head}  (elapsed {elapsed})", *(f"  {ln}" for ln in self.board.lines(now))]
        return "\n".join(rows)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(self.text())


class LiveProgress(_OnBoard):
    """A rich status line (phase, candidate, steps left, ETA; each slot's phase, its
    elapsed and expected time, the warmup's reading; builds ahead), events printed above."""

    def __init__(self, estimate_s: float | None = None, *, verbose: bool = False) -> None:
        from bisector.ui.terminal import make_console

        self.console = make_console(stderr=True)
        self.estimate_s = estimate_s
        self.verbose = verbose  # details printed above the line too
        self.board = _Board()
        self.line = _Line(self.board)
        self.live = self.console.status(self.line)
        self.live.start()

    def status(
        self,
        phase: str,
        candidate: str = "",
        steps_left: int | None = None,
        eta_s: float | None = None,
    ) -> None:
        self.line.head = _describe(phase, candidate, steps_left, eta_s, self.estimate_s)

    def note(self, line: str) -> None:
        self.console.print(line, highlight=False, markup=False)

    def phase(self, event: PhaseStarted) -> None:
        self.board.begin(event)

    def stop(self) -> None:
        self.live.stop()


def _describe(
    phase: str,
    candidate: str,
    steps_left: int | None,
    eta_s: float | None,
    estimate_s: float | None,
) -> str:
    parts = [phase]
    if candidate:
        parts.append(candidate[:12])
    if steps_left is not None:
        parts.append(f"~{steps_left} run{'' if steps_left == 1 else 's'} left")
        if eta_s is None and estimate_s and steps_left > 0:
            eta_s = steps_left * estimate_s
        if eta_s:
            parts.append(f"ETA {format_duration(eta_s)}")
    return " | ".join(parts)


class TeeProgress:
    """Every event to two progresses: the console's (live line or plain lines) and the run
    directory's plain log, so a run watched on a terminal also leaves the lines a nohup
    log would hold, and another shell can `tail -f` them."""

    def __init__(self, first: Progress, second: Progress) -> None:
        self.both = (first, second)

    def status(
        self,
        phase: str,
        candidate: str = "",
        steps_left: int | None = None,
        eta_s: float | None = None,
    ) -> None:
        for p in self.both:
            p.status(phase, candidate, steps_left, eta_s)

    def note(self, line: str) -> None:
        for p in self.both:
            p.note(line)

    def detail(self, line: str) -> None:
        for p in self.both:
            p.detail(line)

    def phase(self, event: PhaseStarted) -> None:
        for p in self.both:
            p.phase(event)

    def reading(self, slot: int, reading: Reading) -> None:
        for p in self.both:
            p.reading(slot, reading)

    def evaluated(self, slot: int) -> None:
        for p in self.both:
            p.evaluated(slot)

    def prefetching(self, commit: str, running: bool) -> None:
        for p in self.both:
            p.prefetching(commit, running)

    def stop(self) -> None:
        try:
            self.both[0].stop()
        finally:
            self.both[1].stop()


@contextlib.contextmanager
def logged_to(progress: Progress, path: Path, estimate_s: float | None) -> Iterator[Progress]:
    """`progress` and, beside it, timestamped plain lines appended to `path`. A log that
    cannot be written (a full disk, a directory or a named pipe in its place) costs the run
    nothing: the console still says it all, and says where the lines are not going."""
    try:
        handle = _append_to(path)
    except OSError as exc:
        progress.note(f"{path} cannot be written ({exc}): progress goes to the console only")
        yield progress
        return
    to_file = PlainProgress(_Quiet(handle), estimate_s, stamped=True)
    try:
        yield TeeProgress(progress, to_file)
    finally:
        to_file.stop()
        with contextlib.suppress(OSError):  # its last flush, on a full disk
            handle.close()


def _append_to(path: Path) -> TextIO:
    """`path` opened to append, never a named pipe or a socket, and opened without
    blocking: a named pipe in its place (`mkfifo progress.log`, its reader not there)
    blocked the run's start for good, holding the run directory's lock; one with a
    reader would block each line while the reader lags."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise OSError(errno.EINVAL, "a named pipe or socket, not a file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a", encoding="utf-8", buffering=1)
    except BaseException:
        os.close(fd)
        raise


class _Quiet:
    """A log file whose write errors (ENOSPC mid-run) are dropped, never raised into the
    evaluation that happened to print."""

    def __init__(self, handle: TextIO) -> None:
        self.handle = handle

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):
            return self.handle.write(text)
        return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.handle.flush()


def make_progress(
    estimate_s: float | None = None,
    stream: TextIO | None = None,
    tick_s: float = TICK_S,
    *,
    verbose: bool = False,
) -> Progress:
    """The live line on a terminal, plain lines otherwise; `verbose` (`-v`): every phase
    change and detail too."""
    out = stream or sys.stderr
    if out.isatty():
        return LiveProgress(estimate_s, verbose=verbose)
    return PlainProgress(out, estimate_s, tick_s, verbose=verbose)
