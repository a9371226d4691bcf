"""The process's entry: runs a command of the CLI (bisector.cli) and ends with its exit code.

Every way a command can end becomes one line on stderr at most and a code from the
command's table (bisector.exitcodes): for `score`, run under `git bisect run`, a usage
error is 128 and a bug 129, so neither can read as *bad*. Termination signals and output
that cannot be written are handled here for the whole life of the process
(bisector.signals, bisector.ui.output).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from enum import IntEnum

import typer
from typer.exceptions import TyperException

from bisector import signals
from bisector.cli import app
from bisector.errors import EXIT_INTERRUPTED, EXIT_USAGE, BisectorError
from bisector.exitcodes import for_command
from bisector.ui import output

# Commands whose stdout is their product: a listing that could not be written is a failure.
_LISTINGS = ("status", "runs", "history")


def main(argv: list[str] | None = None) -> None:
    """Run the command `argv` names (the process's arguments when None) and exit with its code.

    Called with no `argv` it is the process's entry: every termination signal tears
    down and ends in the table's INTERRUPTED code (bisector.signals), and output that
    cannot be written never changes the code (bisector.ui.output), both until the process
    exits. With `argv` (in-process: tests) both hold for the call only.
    """
    codes = for_command(_command(argv))
    args = sys.argv[1:] if argv is None else argv
    # `history --bisect` ends with the bisection's outcome, not with its listing.
    listing = _command(argv) in _LISTINGS and "--bisect" not in args
    if argv is None:
        output.guard_for_process()
        signals.install_for_process()
        try:
            code = _final(codes, _invoke(argv, codes), listing=listing)
            signals.ignore_from_now_on()  # the code is decided: no default action on the way out
        except KeyboardInterrupt:  # the first signal, right as the command ended
            code = int(codes["INTERRUPTED"])
            signals.ignore_from_now_on()  # later signals never raise: nothing can land here
        sys.exit(code)
    with output.guarded(), signals.handling_termination():
        code = _final(codes, _invoke(argv, codes), listing=listing)
    sys.exit(code)


def _command(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    args = sys.argv[1:] if argv is None else argv
    return next((arg for arg in args if not arg.startswith("-")), None)


def _final(codes: type[IntEnum], code: int, *, listing: bool) -> int:
    """The code a command ends with, once signals and output are taken into account."""
    interrupted = int(codes["INTERRUPTED"])
    left_up = codes.__members__.get("LEFT_UP")
    if signals.interrupted() and code != interrupted and (left_up is None or code != left_up):
        # A signal is always 130 (a failed teardown, saying something may still be up,
        # outranks it): whatever the command made of the interrupt on its way out.
        code = interrupted
    failed = codes.__members__.get("OUTPUT_FAILED")
    if listing and failed is not None and code == 0 and output.stdout_failure():
        code = int(failed)  # the listing was the product, and it was not written
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def _invoke(argv: list[str] | None, codes: type[IntEnum]) -> int:
    """Run the command; every way it can end, as the command's exit code."""
    try:
        return _call(argv, codes)
    except KeyboardInterrupt:  # a signal while an error below was being reported
        return int(codes["INTERRUPTED"])


def _call(argv: list[str] | None, codes: type[IntEnum]) -> int:
    usage = int(codes["USAGE"])
    try:
        if "_BISECTOR_COMPLETE" in os.environ:
            # A shell asking for completions (--install-completion's script): click's own
            # main() answers it and exits; no run happens on this path.
            return int(app(args=argv, prog_name="bisector") or 0)
        # click's own main() is bypassed: it turns EPIPE from anywhere into exit 1, which
        # `git bisect run` reads as *bad*, and Ctrl-C into a silent 130.
        command = typer.main.get_command(app)
        args = sys.argv[1:] if argv is None else list(argv)
        with command.make_context("bisector", args) as ctx:
            result = command.invoke(ctx)
    except BisectorError as exc:
        print(f"bisector: error: {exc}", file=sys.stderr)
        # A plain BisectorError is the generic "bad input" (2): the command's own code for
        # it. So is a code outside the command's table or one of its verdicts: an error is
        # never `score`'s 1, which git bisect run reads as *bad*.
        known = {int(m) for m in codes if m.name not in ("GOOD", "BAD") and int(m) != 0}
        code = exc.exit_code
        return usage if code == EXIT_USAGE or code not in known else code
    except typer.Abort:
        return EXIT_INTERRUPTED
    except typer.Exit as exc:
        return exc.exit_code
    except TyperException as exc:  # usage errors: typer prints them itself with help hints
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"bisector: error: {exc.format_message()}", file=sys.stderr)
        return usage
    except KeyboardInterrupt:
        print("bisector: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # a path the user gave that nothing checked first: still one line
        where = f": {exc.filename}" if exc.filename else ""
        print(
            f"bisector: error: {exc.strerror or exc}{where}; check the path and its permissions",
            file=sys.stderr,
        )
        return usage
    except Exception as exc:  # a bug: its own code, never one that reads as a verdict
        if os.environ.get("BISECTOR_DEBUG"):
            traceback.print_exc()
        print(
            f"bisector: internal error (a bug in bisector; BISECTOR_DEBUG=1 shows the "
            f"traceback): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return int(codes["INTERNAL"])
    return result if isinstance(result, int) else 0
