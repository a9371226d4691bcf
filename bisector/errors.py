"""The error types the whole tool speaks.

Two families, kept apart on purpose:

* `BisectorError` is the user's problem (bad input, bad config, a bisect already
  running). Its message says what is wrong and what to do; the top-level handler
  prints it on one line and exits with `exit_code`, never a traceback.
* `InfraError` is the infrastructure's problem while evaluating one candidate (a
  build that fails, a cluster that does not come up, a log without the lines a
  metric needs). It is never a verdict: the search records it as *skip* with
  `reason`.
"""

from __future__ import annotations

# Exit codes shared by every command (each command's own: bisector.exitcodes).
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class BisectorError(Exception):
    """A problem the user can fix; the message says how."""

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(BisectorError):
    """A config file (or flag) holds something the tool cannot use."""


class InfraError(Exception):
    """Evaluating one candidate failed for reasons unrelated to its performance."""

    kind = "infra"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BuildError(InfraError):
    """The candidate does not build: retrying will not help."""

    kind = "build"


class LaunchError(InfraError):
    """The cluster did not come up; may be transient and worth a retry."""

    kind = "launch"


class CollectError(InfraError):
    """The log could not be fetched, or holds no data for the metric."""

    kind = "collect"
