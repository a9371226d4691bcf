"""`local`: the user's own shell commands, run in the candidate's worktree.

Config (`[backends.local]`): `launch` and `collect` are required, `build` and
`teardown` optional, `timeout` (a duration) bounds each command. `peek`, optional,
writes the apiserver log so far to $BISECTOR_LOG during the warmup (early verdicts:
`[run] check_every`); without it the warmup runs its full length. Every command
gets BISECTOR_COMMIT, BISECTOR_WORKTREE, BISECTOR_RUN_DIR, BISECTOR_SLOT and
BISECTOR_LOG (the file `collect` must write the apiserver log to). Each command's
line, output, exit code and duration are appended to `<eval dir>/<step>.log`
(build.log, launch.log, collect.log, teardown.log); a failure's reason carries
the last lines it printed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, Candidate, sleep_steps
from bisector.backends.steps import tail
from bisector.errors import BuildError, CollectError, InfraError, LaunchError

KEYS = ("build", "launch", "collect", "teardown", "peek", "timeout")
LOG_NAME = "kube-apiserver.log"
# A look at the log may take as long as the interval between looks (at least this long):
# a hanging `peek` must not stretch every step of the warmup by the whole `timeout`.
MIN_PEEK_TIMEOUT_S = 30.0


def command_log(candidate: Candidate, step: str) -> Path:
    """Where `step`'s commands and output are kept: `<eval dir>/<step>.log`."""
    return candidate.eval_dir / f"{step}.log"


class LocalBackend:
    KEYS = KEYS
    name = "local"

    def __init__(self, context: BackendContext) -> None:
        section = context.section
        section.check_keys(KEYS)
        self.context = context
        self.build_cmd = section.opt_str("build")
        self.launch_cmd = section.get_str("launch")
        self.collect_cmd = section.get_str("collect")
        self.teardown_cmd = section.opt_str("teardown")
        self.peek_cmd = section.opt_str("peek")
        self.timeout_s = section.get_duration("timeout", "1h", positive=True)
        self.peek_timeout_s = self.timeout_s  # bounded by the look interval in warmup_steps

    def _env(self, candidate: Candidate) -> dict[str, str]:
        return {
            "BISECTOR_COMMIT": candidate.commit,
            "BISECTOR_WORKTREE": str(candidate.worktree),
            "BISECTOR_RUN_DIR": str(self.context.run_dir),
            "BISECTOR_SLOT": str(candidate.slot),
            "BISECTOR_LOG": str(candidate.log_dir / LOG_NAME),
        }

    def _run(self, step: str, script: str, candidate: Candidate, error: type[InfraError]) -> None:
        try:
            proc.run(
                ["bash", "-c", script],
                cwd=candidate.worktree,
                env=self._env(candidate),
                timeout=self.timeout_s,
                log=command_log(candidate, step),
            )
        except proc.CommandError as exc:
            raise error(f"{step} failed ({exc.why}): {tail(exc)}") from None

    def setup(self) -> None:
        """Nothing shared across candidates."""

    def build(self, candidate: Candidate) -> None:
        if self.build_cmd:
            self._run("build", self.build_cmd, candidate, BuildError)

    def launch(self, candidate: Candidate) -> None:
        self._run("launch", self.launch_cmd, candidate, LaunchError)

    def warmup(self, candidate: Candidate) -> None:
        time.sleep(self.context.warmup_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them."""
        self.peek_timeout_s = min(self.timeout_s, max(every_s, MIN_PEEK_TIMEOUT_S))
        return sleep_steps(time.sleep, self.context.warmup_s, every_s)

    def peek(self, candidate: Candidate) -> list[Path]:
        """The `peek` command's log so far, in `<eval>/peek/` (never the final log's place)."""
        if not self.peek_cmd:
            raise CollectError("no `peek` command in [backends.local]: the warmup runs in full")
        log = candidate.eval_dir / "peek" / LOG_NAME
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**self._env(candidate), "BISECTOR_LOG": str(log)}
        try:
            proc.run(["bash", "-c", self.peek_cmd], cwd=candidate.worktree, env=env,
                     timeout=self.peek_timeout_s, log=command_log(candidate, "peek"))  # fmt: skip
        except proc.CommandError as exc:
            raise CollectError(f"peek failed ({exc.why}): {tail(exc)}") from None
        return [log] if log.is_file() and log.stat().st_size else []

    def collect(self, candidate: Candidate) -> list[Path]:
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        self._run("collect", self.collect_cmd, candidate, CollectError)
        log = candidate.log_dir / LOG_NAME
        if not log.is_file():
            raise CollectError(f"collect did not write the log to $BISECTOR_LOG ({log})")
        return [log]

    def teardown(self, candidate: Candidate) -> None:
        if self.teardown_cmd:
            self._run("teardown", self.teardown_cmd, candidate, InfraError)

    def close(self) -> None:
        """Nothing shared across candidates."""

    def plan(self, candidate: Candidate) -> list[str]:
        steps = [self.build_cmd, self.launch_cmd, f"sleep {self.context.warmup_s:g}"]
        steps += [self.collect_cmd, self.teardown_cmd]
        return [s for s in steps if s]
