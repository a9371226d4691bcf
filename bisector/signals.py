"""Termination signals: the first one unwinds like Ctrl-C; teardown finishes whatever follows.

A leaked cluster costs real money, so every signal that would otherwise end the
process (SIGINT, SIGTERM, SIGHUP from a closed terminal or an ssh drop, SIGQUIT
from Ctrl-\\, and the other signals whose default is to terminate) is turned into
one KeyboardInterrupt, and every `finally` (teardown) runs. The rules:

- The first signal raises KeyboardInterrupt in the main thread (unless a teardown
  is running there: see below). From then on the process is on its way out, and
  any further signal is reported on stderr and ignored: raised again, it would
  land in the middle of the cleanup the first one started (a teardown not yet
  entered, a worktree half removed) and abort it.
- Inside `held_during` (a teardown), signals are reported and held; the interrupt
  is raised once the block is done. If the block fails instead (a teardown that
  fails), the interrupt stays pending (`interrupt_pending`) for the caller to act on.
- The handlers stay installed until the process exits (`install_for_process`),
  and once the exit code is decided the signals are ignored (`ignore_from_now_on`:
  Python's finalization would otherwise restore the default actions): a signal
  after the run's own cleanup, on the way to exit, still ends in 130, never in the
  default action's 128 + N.
- A signal ignored when bisector started (`nohup`, a background job of a
  non-interactive shell) stays ignored: the user asked for the run to outlive it.
- SIGPIPE stays ignored as Python sets it: a closed output is an output failure,
  handled where output is written (bisector.ui.output), never a reason to stop a run.
- kill -9 cannot be caught: it stops at once, and the next run (or `bisector
  cleanup`) tears down what it left.

Messages go to file descriptor 2 directly (os.write): a handler runs between two
bytecodes of the main thread, which may be inside a write to sys.stderr, and a
second write to the same buffered stream would fail ("reentrant call").
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType

# Every signal whose default action ends the process and that a person, a terminal, a
# scheduler or a resource limit sends to ask it to stop (signal(7)). Not the faults
# (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS: the interpreter cannot go
# on), not SIGKILL/SIGSTOP (cannot be caught), not SIGPIPE/SIGXFSZ (Python ignores them
# and reports the failed write instead).
TERMINATING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name)
    for name in (
        "SIGINT",
        "SIGTERM",
        "SIGHUP",
        "SIGQUIT",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGXCPU",
        "SIGPWR",
    )
    if hasattr(signal, name)
)

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


@dataclass
class _State:
    pid: int = 0  # the process the handlers were installed in (forked children are not it)
    depth: int = 0  # installs in effect (a process-wide one counts once, forever)
    stopping: bool = False  # an interrupt was raised: later signals are reported only
    pending: bool = False  # held during a block that failed: the interrupt is still owed
    received: int = 0  # signals received in all
    holding: list[str] = field(default_factory=list)  # what the main thread is finishing
    held: list[int] = field(default_factory=list)  # signals held by the outermost block
    previous: dict[int, _Handler] = field(default_factory=dict)
    raised: int = 0  # the signal whose KeyboardInterrupt was raised last (0: none)
    owed: int = 0  # a signal re-delivered after its interrupt was dropped, not yet raised
    hook: Callable[[sys.UnraisableHookArgs], object] | None = None  # the one replaced


_state = _State()


def _on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """The interrupt raised by the first signal landed in a finalizer (a `__del__`, a
    weakref callback: Python runs them between any two bytecodes), where Python prints
    the exception and drops it: the run would go on as if nothing had arrived, and every
    later signal would be "received while stopping" and ignored (a SIGHUP during the
    report's upload would hang the run). Deliver the same signal again, to the main
    thread's next bytecode outside this hook (see `_on_signal`)."""
    dropped = isinstance(unraisable.exc_value, KeyboardInterrupt)
    if dropped and _state.stopping and _state.raised and os.getpid() == _state.pid:
        _say("bisector: the interrupt landed in a finalizer and was lost; raising it again")
        _state.stopping = False
        _state.owed = _state.raised
        _deliver_again(_state.owed)
        return
    (_state.hook or sys.__unraisablehook__)(unraisable)


def _deliver_again(signum: int) -> None:
    """Mark `signum` as arrived once more, from another thread: the main thread then
    runs the handler at one of its next bytecodes. Marked from the main thread itself,
    the handler would run again right after the marking call, inside the handler or the
    hook that asked for it. `_thread.start_new_thread` returns without waiting for the
    thread (threading.Thread.start waits, and that wait is where a re-delivery ran the
    handler inside the hook under load and was dropped)."""
    _thread.start_new_thread(_interrupt_main_if_ours, (signum,))


def _interrupt_main_if_ours(signum: int) -> None:
    # Only while our handlers are installed: once the block that installed them has
    # ended, the signal is not ours to raise any more.
    if _state.depth > 0:
        _thread.interrupt_main(signal.Signals(signum))


def _in_unraisable_hook(frame: FrameType | None) -> bool:
    """The main thread is inside `_on_unraisable` (or what it calls): an exception
    raised there is not passed on either, Python prints "Exception ignored in
    sys.unraisablehook" and drops it."""
    while frame is not None:
        if frame.f_code is _on_unraisable.__code__:
            return True
        frame = frame.f_back
    return False


def _say(text: str) -> None:
    with contextlib.suppress(OSError):  # stderr closed, or the terminal that is gone
        os.write(2, (text + "\n").encode("utf-8", errors="replace"))


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if os.getpid() != _state.pid:
        # A forked child (a log scan worker) inherited this handler: die as by default.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _in_unraisable_hook(frame):
        # Raised here, the interrupt would be dropped like the one the hook is handling
        # (the re-delivery itself, or a signal that arrives meanwhile): deliver it again,
        # until it lands after the hook.
        _deliver_again(signum)
        return
    redelivered = signum == _state.owed
    if redelivered:
        _state.owed = 0
    else:
        _state.received += 1
    name = signal.Signals(signum).name
    again = " again" if _state.received > 1 else ""
    if _state.holding:
        _state.held.append(signum)
        if not redelivered:
            _say(
                f"bisector: {name} received{again} during {_state.holding[-1]}; finishing it "
                "first so nothing is left running (kill -9 stops at once; then run "
                "`bisector cleanup`)"
            )
        return
    if _state.stopping:
        if not redelivered:
            _say(
                f"bisector: {name} received{again} while stopping; the teardown finishes "
                "first (kill -9 stops at once; then run `bisector cleanup`)"
            )
        return
    _state.stopping = True
    _state.raised = signum
    raise KeyboardInterrupt


def _install() -> None:
    if _state.depth == 0:
        _state.pid = os.getpid()
        _state.stopping = _state.pending = False
        _state.received = 0
        _state.held.clear()
        _state.previous.clear()
        _state.raised = _state.owed = 0
        _state.hook = sys.unraisablehook
        sys.unraisablehook = _on_unraisable
        for signum in TERMINATING:
            current = signal.getsignal(signum)
            if current == signal.SIG_IGN:
                continue  # nohup or a background job: ignored on purpose by whoever started us
            _state.previous[signum] = current
            signal.signal(signum, _on_signal)
    _state.depth += 1


def _uninstall() -> None:
    _state.depth -= 1
    if _state.depth == 0:
        for signum, handler in _state.previous.items():
            signal.signal(signum, handler)
        _state.previous.clear()
        _state.owed = 0  # not ours to raise any more: the block that installed us has ended
        if _state.hook is not None:
            sys.unraisablehook = _state.hook
            _state.hook = None


def install_for_process() -> None:
    """Handle every termination signal until the process exits (the CLI's entry point).

    Never undone: a signal between the last cleanup and the exit must not meet the
    default action (exit 128 + N without a word).
    """
    if threading.current_thread() is threading.main_thread():
        _install()


def ignore_from_now_on() -> None:
    """The process's answer is decided and its cleanup done: ignore termination signals
    until it is gone. Python's finalization puts SIG_DFL back for every signal that has
    a Python handler, so without this a signal during the exit itself (a second Ctrl-C,
    a SIGTERM storm from a supervisor) would end the process with 128 + N after all."""
    if threading.current_thread() is not threading.main_thread() or _state.depth == 0:
        return
    for signum in _state.previous:
        signal.signal(signum, signal.SIG_IGN)


@contextlib.contextmanager
def handling_termination() -> Iterator[None]:
    """Every termination signal raises KeyboardInterrupt inside the block (see the module
    docstring); the earlier handlers come back afterwards. For code run in a process
    bisector does not own (tests, scripts); the CLI uses `install_for_process`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _install()
    try:
        yield
    finally:
        _uninstall()


def sigterm_as_interrupt() -> contextlib.AbstractContextManager[None]:
    """SIGTERM (and every other termination signal) unwinds like Ctrl-C, so every
    `finally` (teardown) runs. Kept for the run loop's callers; see handling_termination."""
    return handling_termination()


def interrupted() -> bool:
    """A termination signal has been received (the process is stopping, or owes it)."""
    return _state.stopping or _state.pending


def interrupt_pending() -> bool:
    """A signal was held during a block that then failed (a teardown that failed): the
    caller, having recorded the failure, raises KeyboardInterrupt now. True once."""
    if not _state.pending:
        return False
    _state.pending = False
    _state.stopping = True
    return True


@contextlib.contextmanager
def held_during(what: str) -> Iterator[None]:
    """Run the block to its end; signals that arrive meanwhile are reported, then raised.

    Off the main thread (parallel slots) Python delivers no signals to the block:
    the main thread holds them the same way while it waits for the slots.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _state.depth == 0:  # called outside the CLI (a test, a script): handle for the block
        with handling_termination(), held_during(what):
            yield
        return
    _state.holding.append(what)
    try:
        yield
    except BaseException:
        _state.holding.pop()
        if not _state.holding and _state.held:
            _state.held.clear()
            _state.pending = not _state.stopping  # the failure goes first, the signal after
        raise
    _state.holding.pop()
    if _state.holding or not _state.held:
        return
    first = _state.held[0]
    _state.held.clear()
    if not _state.stopping:
        _state.stopping = True
        _state.raised = first
        raise KeyboardInterrupt
