"""External commands as data: run them, print them, retry the transient ones.

A backend describes each command it runs as a `Step` (argv, working directory,
added env, timeout). The same `Step` objects are executed by `run_step` and
rendered by `Step.render` for `--dry-run`, so the plan cannot drift from what
an evaluation really does. Steps are also stored in the run directory's
resource record, so `bisector cleanup` can replay a crashed run's teardown.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from bisector import proc

# stderr/stdout fragments of failures that a later attempt can get past: GCE
# quota and rate limits, API hiccups, ssh/scp to a VM that is still booting,
# registries that throttle. Anything else (a script error, a bad flag, a
# compile error) fails the same way twice and is not retried.
_TRANSIENT = re.compile(
    r"quota|rateLimitExceeded|rate limit|too many requests|toomanyrequests"
    r"|\b(?:error|code|status|http)[ :=]*50[0234]\b|backendError|internal error"
    r"|service unavailable|try again"
    r"|ssh: connect to host|connection (?:timed out|refused|reset|closed)"
    r"|exited with return code \[255\]|broken pipe|i/o timeout|TLS handshake timeout"
    r"|resourceNotReady|currently unavailable|operation .* is in progress",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Step:
    cmd: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = proc.DEFAULT_TIMEOUT_S

    def render(self) -> str:
        """The step as one shell line a user could paste: cd, env, command."""
        parts: list[str] = []
        if self.cwd:
            parts.append(f"cd {shlex.quote(self.cwd)} &&")
        parts.extend(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        parts.append(shlex.join(self.cmd))
        return " ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {
            "cmd": list(self.cmd),
            "cwd": self.cwd,
            "env": dict(self.env),
            "timeout": self.timeout,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Step:
        cmd = data["cmd"]
        env = data.get("env") or {}
        cwd = data.get("cwd")
        timeout = data.get("timeout", proc.DEFAULT_TIMEOUT_S)
        assert isinstance(cmd, list) and isinstance(env, dict)
        return cls(
            tuple(str(c) for c in cmd),
            None if cwd is None else str(cwd),
            {str(k): str(v) for k, v in env.items()},
            float(timeout),  # type: ignore[arg-type]
        )


def step(
    *cmd: str | Path,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = proc.DEFAULT_TIMEOUT_S,
) -> Step:
    return Step(
        tuple(str(c) for c in cmd), None if cwd is None else str(cwd), dict(env or {}), timeout
    )


def run_step(s: Step, *, check: bool = True, log: Path | None = None) -> proc.CmdResult:
    """Run `s` through `proc.run`; with `log`, its command line and output are appended there."""
    return proc.run(
        list(s.cmd), cwd=s.cwd, env=dict(s.env) or None, timeout=s.timeout, check=check, log=log
    )


def is_transient(exc: BaseException) -> bool:
    """A CommandError whose output says a retry may succeed (never a timeout)."""
    if not isinstance(exc, proc.CommandError) or exc.timed_out or exc.code is None:
        return False
    return bool(_TRANSIENT.search(f"{exc.stderr}\n{exc.stdout}"))


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    initial_s: float = 30.0
    max_s: float = 300.0

    def retrying(self, sleep: Callable[[float], None]) -> Retrying:
        """Exponential backoff on transient CommandErrors; other errors pass through."""
        return Retrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=wait_exponential(multiplier=self.initial_s, max=self.max_s),
            retry=retry_if_exception(is_transient),
            sleep=sleep,
            reraise=True,
        )


def run_with_retries(
    s: Step, policy: RetryPolicy, sleep: Callable[[float], None], *, log: Path | None = None
) -> proc.CmdResult:
    """`s`, retried on transient failures; each attempt is its own block in `log`."""
    for attempt in policy.retrying(sleep):
        with attempt:
            return run_step(s, log=log)
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def tail(exc: proc.CommandError, chars: int = 400, lines: int = 3) -> str:
    """The last lines a failed command printed, on one line, for a skip reason.

    Stderr when it has any text, else stdout; whole lines from the end (only a
    single line longer than `chars` is cut, keeping its end, where errors are);
    the failure itself (`exc.why`) when the command printed nothing.
    """
    text = exc.stderr if exc.stderr.strip() else exc.stdout
    return " | ".join(proc.last_lines(text, lines, chars)) or exc.why


def tree_step(worktree: Path, commit: str, timeout: float) -> Step:
    """`git rev-parse <commit>^{tree}`: the build cache key of a candidate."""
    return step("git", "rev-parse", f"{commit}^{{tree}}", cwd=worktree, timeout=timeout)


def start_with_retries(
    start: Step,
    undo: Step,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    *,
    log: Path | None = None,
) -> None:
    """Run a start that is not idempotent (kube-up, start-kubemark, kind create).

    After a transient failure, `undo` clears what the attempt half-created
    before the backoff and the next attempt; other failures raise at once.
    Raises the last CommandError. Every attempt and undo is a block in `log`.
    """
    for attempt in policy.retrying(sleep):
        with attempt:
            try:
                run_step(start, log=log)
            except proc.CommandError as exc:
                if is_transient(exc) and attempt.retry_state.attempt_number < policy.attempts:
                    with contextlib.suppress(proc.CommandError):
                        run_step(undo, check=False, log=log)
                raise
