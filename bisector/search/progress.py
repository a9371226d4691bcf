"""Progress: a live line on a terminal (rich), plain log lines otherwise.

`steps_left` counts the runs still to come, the one starting now included: the
search's own estimate, then the descent into a merge, the confirmation runs and the
safety net of early good verdicts (bisector.bisection.pipeline). The ETA is that many
evaluations of the cost model's length.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from bisector.durations import format_duration


class Progress(Protocol):
    def status(self, phase: str, candidate: str = "", steps_left: int | None = None) -> None: ...

    def note(self, line: str) -> None: ...

    def stop(self) -> None: ...


class PlainProgress:
    """One line per event on stderr (CI logs, pipes)."""

    def __init__(self, stream: TextIO | None = None, estimate_s: float | None = None) -> None:
        self.stream = stream or sys.stderr
        self.estimate_s = estimate_s

    def status(self, phase: str, candidate: str = "", steps_left: int | None = None) -> None:
        self.note(_describe(phase, candidate, steps_left, self.estimate_s))

    def note(self, line: str) -> None:
        print(f"bisector: {line}", file=self.stream, flush=True)

    def stop(self) -> None:
        """Nothing to clean up."""


class LiveProgress:
    """A rich status line (phase, candidate, steps left, ETA) with events printed above it."""

    def __init__(self, estimate_s: float | None = None) -> None:
        from bisector.terminal import make_console

        self.console = make_console(stderr=True)
        self.estimate_s = estimate_s
        self.started = time.monotonic()
        self.live = self.console.status("starting")
        self.live.start()

    def status(self, phase: str, candidate: str = "", steps_left: int | None = None) -> None:
        elapsed = format_duration(time.monotonic() - self.started)
        text = _describe(phase, candidate, steps_left, self.estimate_s)
        self.live.update(f"{text}  [dim](elapsed {elapsed})[/dim]")

    def note(self, line: str) -> None:
        self.console.print(line, highlight=False, markup=False)

    def stop(self) -> None:
        self.live.stop()


def _describe(phase: str, candidate: str, steps_left: int | None, estimate_s: float | None) -> str:
    parts = [phase]
    if candidate:
        parts.append(candidate[:12])
    if steps_left is not None:
        parts.append(f"~{steps_left} run{'' if steps_left == 1 else 's'} left")
        if estimate_s and steps_left > 0:
            parts.append(f"ETA {format_duration(steps_left * estimate_s)}")
    return " | ".join(parts)


def make_progress(estimate_s: float | None = None, stream: TextIO | None = None) -> Progress:
    out = stream or sys.stderr
    if out.isatty():
        return LiveProgress(estimate_s)
    return PlainProgress(out, estimate_s)
