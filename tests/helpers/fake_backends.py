"""An in-process backend for repositories made by `build_repo`: no subprocess, fast.

It reads the candidate's `value` file and writes that many node PATCH 409 lines
(plus a few 200s) as the collected log; a `BROKEN` file fails the build. A test
can replace any run's value with `tamper(commit, nth_run, value) -> value | None`
(None: a log without data) to model noise or a flaky cluster. It records every
step in `steps` as (step, commit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bisector.backends.base import BackendTraits, Candidate
from bisector.errors import BuildError
from tests.helpers.local_backend import CONFLICT, WRITE

Tamper = Callable[[str, int, int], int | None]


class FileValueBackend:
    name = "file-value"
    traits = BackendTraits(own_logs=True)  # writes each evaluation's log itself, like the sim

    def __init__(self, tamper: Tamper | None = None) -> None:
        self.tamper = tamper
        self.steps: list[tuple[str, str]] = []
        self.runs: Counter[str] = Counter()

    def setup(self) -> None:
        self.steps.append(("setup", ""))

    def close(self) -> None:
        self.steps.append(("close", ""))

    def plan(self, candidate: Candidate) -> list[str]:
        return [f"read {candidate.worktree / 'value'}"]

    def build(self, candidate: Candidate) -> None:
        self.steps.append(("build", candidate.commit))
        if (candidate.worktree / "BROKEN").exists():
            raise BuildError("BROKEN file present")

    def launch(self, candidate: Candidate) -> None:
        self.steps.append(("launch", candidate.commit))

    def warmup(self, candidate: Candidate) -> None:
        self.steps.append(("warmup", candidate.commit))

    def collect(self, candidate: Candidate) -> list[Path]:
        self.steps.append(("collect", candidate.commit))
        value: int | None = int((candidate.worktree / "value").read_text())
        self.runs[candidate.commit] += 1
        if self.tamper is not None and value is not None:
            value = self.tamper(candidate.commit, self.runs[candidate.commit], value)
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "kube-apiserver.log"
        lines = [] if value is None else [CONFLICT] * value + [WRITE] * 3
        log.write_text("".join(line + "\n" for line in lines))
        return [log]

    def teardown(self, candidate: Candidate) -> None:
        self.steps.append(("teardown", candidate.commit))
