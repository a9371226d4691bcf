"""`local`: the user's own shell commands, run in the candidate's worktree.

Config (`[backends.local]`): `launch` and `collect` are required, `build` and
`teardown` optional, `timeout` (a duration) bounds each command. `peek`, optional,
writes the apiserver log so far to $BISECTOR_LOG during the warmup (early verdicts:
`[run] check_every`); without it the warmup runs its full length. `metrics`, optional,
writes the apiserver's /metrics to $BISECTOR_METRICS; it runs at the warmup's start and
before `collect` (metrics-before.prom, metrics-after.prom: bisector/collected.py),
for the `prometheus` metric source. `workload`, optional, is the warmup: a command (e.g.
`clusterloader2 --testconfig=... --report-dir="$BISECTOR_REPORT_DIR" ...`) run after the
launch; when it ends, the warmup ends (`warmup` is not waited), and what it wrote to
$BISECTOR_REPORT_DIR (`<log dir>/cl2`) is the run's CL2 report; a workload that fails is a
skip with its reason, unless it is ClusterLoader2 failing only its own SLO checks (exit 1,
every error a violation: bisector.metrics.cl2.slo_violations): that run measured.
Every command gets BISECTOR_COMMIT, BISECTOR_WORKTREE,
BISECTOR_RUN_DIR, BISECTOR_SLOT, BISECTOR_REPORT_DIR, BISECTOR_LOG (the file `collect`
must write the apiserver log to) and BISECTOR_LAUNCH_ID (a log on the wall clock shows it
is this launch's by starting after it; one on another clock, a replay, by naming it: a
line holding `bisector-launch-id=$BISECTOR_LAUNCH_ID`). Each command's line, output, exit
code and duration are appended to `<eval dir>/<step>.log` (build.log, launch.log,
workload.log, metrics.log, collect.log, teardown.log); a failure's reason carries the last
lines it printed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, BackendTraits, Candidate, sleep_steps
from bisector.backends.steps import tail
from bisector.collected import CL2_REPORT_DIR, METRICS_AFTER, METRICS_BEFORE
from bisector.config import keys_of, read_settings, setting
from bisector.errors import BuildError, CollectError, InfraError, LaunchError
from bisector.metrics.cl2 import measured_violations


@dataclass(frozen=True)
class LocalSettings:
    """`[backends.local]`: bash commands run in the candidate's worktree, declared once."""

    launch: str = setting("str", doc="starts the cluster")
    collect: str = setting("str", doc="copies the apiserver log to $BISECTOR_LOG_DIR")
    build: str | None = setting("str", None, "builds the candidate")
    teardown: str | None = setting("str", None, "stops the cluster")
    peek: str | None = setting("str", None, "the log so far, for early verdicts")
    metrics: str | None = setting("str", None, "writes /metrics snapshots")
    workload: str | None = setting("str", None, "a command that is the warmup")
    timeout: float = setting(
        "duration", "1h", "each command", above=0, why="every command would fail at once"
    )


KEYS = keys_of(LocalSettings)
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
        cfg = read_settings(LocalSettings, context.section)
        self.context = context
        self.build_cmd = cfg.build
        self.launch_cmd = cfg.launch
        self.collect_cmd = cfg.collect
        self.teardown_cmd = cfg.teardown
        self.peek_cmd = cfg.peek
        self.metrics_cmd = cfg.metrics
        self.workload_cmd = cfg.workload
        self.timeout_s = cfg.timeout
        self.peek_timeout_s = self.timeout_s  # bounded by the look interval in warmup_steps

    def _env(self, candidate: Candidate) -> dict[str, str]:
        return {
            "BISECTOR_COMMIT": candidate.commit,
            "BISECTOR_WORKTREE": str(candidate.worktree),
            "BISECTOR_RUN_DIR": str(self.context.run_dir),
            "BISECTOR_SLOT": str(candidate.slot),
            "BISECTOR_LOG": str(candidate.log_dir / LOG_NAME),
            "BISECTOR_REPORT_DIR": str(candidate.log_dir / CL2_REPORT_DIR),
            # A log on a clock of its own (a replay) shows it is this launch's by naming it.
            "BISECTOR_LAUNCH_ID": candidate.launch_id,
        }

    @property
    def traits(self) -> BackendTraits:
        # A workload's run is the warmup: its length is the workload's, not `[run] warmup`.
        return BackendTraits(waits_warmup=self.workload_cmd is None)

    def _run(
        self,
        step: str,
        script: str,
        candidate: Candidate,
        error: type[InfraError],
        env: dict[str, str] | None = None,
    ) -> None:
        try:
            proc.run(
                ["bash", "-c", script],
                cwd=candidate.worktree,
                env={**self._env(candidate), **(env or {})},
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
        self._snapshot(candidate, METRICS_BEFORE)
        if self.workload_cmd:
            self._workload(candidate)
        else:
            time.sleep(self.context.warmup_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them.

        A workload runs whole (its end is the warmup's): one step, no look before it ends.
        """
        self.peek_timeout_s = min(self.timeout_s, max(every_s, MIN_PEEK_TIMEOUT_S))
        self._snapshot(candidate, METRICS_BEFORE)
        if self.workload_cmd:
            return self._workload_step(candidate)
        return sleep_steps(time.sleep, self.context.warmup_s, every_s)

    def _workload_step(self, candidate: Candidate) -> Iterator[float]:
        started = time.monotonic()
        self._workload(candidate)
        yield time.monotonic() - started

    def _workload(self, candidate: Candidate) -> None:
        """The workload, to its end; a failure (exit code, timeout) is a skip with its reason,
        unless it is ClusterLoader2 failing only its own SLO checks: it ran and measured."""
        assert self.workload_cmd is not None
        report = candidate.log_dir / CL2_REPORT_DIR
        report.mkdir(parents=True, exist_ok=True)
        try:
            proc.run(["bash", "-c", self.workload_cmd], cwd=candidate.worktree,
                     env=self._env(candidate), timeout=self.timeout_s,
                     log=command_log(candidate, "workload"))  # fmt: skip
        except proc.CommandError as exc:
            if not measured_violations(exc, report):
                raise CollectError(f"workload failed ({exc.why}): {tail(exc)}") from None

    def _snapshot(self, candidate: Candidate, name: str) -> None:
        """`metrics` into the log dir as `name`; a failed or empty read is a skip."""
        if not self.metrics_cmd:
            return
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        path = candidate.log_dir / name
        path.unlink(missing_ok=True)  # never an earlier attempt's file
        self._run(
            "metrics", self.metrics_cmd, candidate, CollectError, {"BISECTOR_METRICS": str(path)}
        )
        if not path.is_file() or not path.stat().st_size:
            raise CollectError(f"`metrics` wrote nothing to $BISECTOR_METRICS ({path})")

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
        self._snapshot(candidate, METRICS_AFTER)
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
        snapshot = f"# /metrics: {self.metrics_cmd}" if self.metrics_cmd else None
        warmup = f"# workload: {self.workload_cmd}" if self.workload_cmd else None
        steps = [self.build_cmd, self.launch_cmd, snapshot]
        steps += [warmup or f"sleep {self.context.warmup_s:g}", snapshot]
        steps += [self.collect_cmd, self.teardown_cmd]
        return [s for s in steps if s]
