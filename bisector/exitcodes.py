"""Every command's exit codes, one table each, and the help line that lists them.

`score` is run under `git bisect run`, which reads 0 as good, 125 as skip, any
other code from 1 to 127 as *bad* and 128 or more as "stop the bisection". So
`score` never uses a code below 128 for a mistake: a typo in a flag, a config it
cannot read or a bug in bisector stops git bisect instead of marking the commit
bad. The other commands are not run under git bisect, but keep the same care: a
code means one thing, and an unexpected exception is never a culprit verdict.

Two rules hold for every command (bisector.entry.main):
- Every termination signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, ...; a second or third
  one too) ends in INTERRUPTED, 130: one code whatever the signal, because callers read
  one "stopped before an answer" code (128 + N from the default action would differ per
  signal, and 129 is `score`'s "bug"). Only LEFT_UP, a failed teardown, outranks it.
- Output that cannot be written (a closed or full stdout/stderr, a pipe whose reader is
  gone) never changes a verdict or an outcome: the command goes on and its code stands.
  Where the output is the product (`score` without --threshold, `status`, `runs`,
  `history`), OUTPUT_FAILED says it was not written.
"""

from __future__ import annotations

from enum import IntEnum


class ScoreExit(IntEnum):
    GOOD = 0  # below the threshold
    BAD = 1  # at or above the threshold
    NO_VERDICT = 125  # the log cannot give one: missing, corrupt, truncated, no data, too short
    USAGE = 128  # a mistake in the command line or config: git bisect run stops
    INTERNAL = 129  # a bug in bisector: git bisect run stops
    INTERRUPTED = 130  # any termination signal (SIGINT, SIGTERM, SIGHUP, ...), however many
    # No --threshold (the scores were the product) and stdout could not take them (closed,
    # a pipe whose reader is gone, a full disk). With --threshold the verdict's code stands.
    OUTPUT_FAILED = 131


class RunExit(IntEnum):
    FOUND = 0  # culprit found and confirmed
    USAGE = 2  # bad input: one line says what to fix
    INCONCLUSIVE = 3  # no single confirmed culprit (the report names the candidates)
    # Culprits found and confirmed, but with all of them reverted the bad endpoint still
    # measures bad: more culprits than found (max_culprits, or a further search ended
    # without a confirmed one); the report says which and what was measured.
    PARTIAL = 4
    LEFT_UP = 6  # a teardown failed: something may still be running; see `bisector cleanup`
    INTERNAL = 70  # a bug in bisector
    INTERRUPTED = 130


class DemoExit(IntEnum):
    FOUND = 0  # the planted commit was named and confirmed
    USAGE = 2
    MISSED = 3  # the bisection did not name the planted commit
    INTERNAL = 70
    INTERRUPTED = 130


class NightlyExit(IntEnum):
    NOTHING = 0  # no new regression
    USAGE = 2  # bad config: one line naming the file and key
    FOUND = 3  # a culprit found and reported
    REPORTED = 4  # a regression reported, not bisected to a confirmed culprit
    BUSY = 5  # another nightly holds the state directory
    LEFT_UP = 6  # a teardown failed: something may still be running; see `bisector cleanup`
    INTERNAL = 70
    INTERRUPTED = 130


class HistoryExit(IntEnum):
    OK = 0  # scored; the range (if any) printed
    USAGE = 2
    INTERNAL = 70
    INTERRUPTED = 130
    OUTPUT_FAILED = 74  # the listing could not be written (stdout closed or full)


class CleanupExit(IntEnum):
    CLEAN = 0  # nothing recorded is left up
    LEFT_UP = 1  # something could not be removed; it stays recorded
    USAGE = 2
    INTERNAL = 70
    INTERRUPTED = 130


class DoctorExit(IntEnum):
    READY = 0
    PROBLEMS = 1  # each printed with what to install or set
    USAGE = 2
    # --rehearse: a stage failed on the twin, a call was unmodelled, or something was left
    REHEARSAL_FAILED = 3
    INTERNAL = 70
    INTERRUPTED = 130


class EvaluateExit(IntEnum):
    HANDED_BACK = 0  # the measurement (a value or a skip) was handed back
    USAGE = 2  # no spec, or one that cannot be read
    NOT_HANDED_BACK = 3  # measured, but the results could not be handed back (the bucket)
    INTERNAL = 70
    INTERRUPTED = 130


class StatusExit(IntEnum):
    OK = 0
    USAGE = 2
    INTERNAL = 70
    INTERRUPTED = 130
    OUTPUT_FAILED = 74  # the listing could not be written (stdout closed or full)


class MarkExit(IntEnum):
    OK = 0
    USAGE = 2
    INTERNAL = 70
    INTERRUPTED = 130


class RunsExit(IntEnum):
    OK = 0
    USAGE = 2
    INTERNAL = 70
    INTERRUPTED = 130
    OUTPUT_FAILED = 74  # the listing could not be written (stdout closed or full)


_MEANING = {
    "GOOD": "good",
    "BAD": "bad",
    "NO_VERDICT": "no verdict (skip)",
    "USAGE": "bad input",
    "INTERNAL": "internal error",
    "INTERRUPTED": "interrupted",
    "FOUND": "culprit found",
    "INCONCLUSIVE": "inconclusive",
    "PARTIAL": "culprits confirmed, not all of the regression explained",
    "LEFT_UP": "teardown failed, something may be left up",
    "MISSED": "planted commit missed",
    "NOTHING": "nothing new",
    "REPORTED": "reported, not bisected",
    "BUSY": "another nightly is running",
    "OK": "ok",
    "CLEAN": "nothing left up",
    "READY": "ready",
    "PROBLEMS": "problems found",
    "REHEARSAL_FAILED": "the --rehearse run on the GCE twin did not pass",
    "OUTPUT_FAILED": "stdout could not be written",
    "HANDED_BACK": "measurement handed back (a value or a skip)",
    "NOT_HANDED_BACK": "measured, not handed back",
}

TABLES: dict[str, type[IntEnum]] = {
    "score": ScoreExit,
    "run": RunExit,
    "demo": DemoExit,
    "nightly": NightlyExit,
    "history": HistoryExit,
    "cleanup": CleanupExit,
    "doctor": DoctorExit,
    "status": StatusExit,
    "mark": MarkExit,
    "runs": RunsExit,
    "evaluate": EvaluateExit,
}


def describe(table: type[IntEnum]) -> str:
    """`exit 0 good, 1 bad, ...` for a command's help text."""
    return "Exit " + ", ".join(f"{m.value} {_MEANING.get(m.name, m.name.lower())}" for m in table)


def for_command(name: str | None) -> type[IntEnum]:
    """The table of the command `name` (the generic one for unknown or no command)."""
    return TABLES.get(name or "", StatusExit)
