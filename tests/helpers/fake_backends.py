"""In-process fake backends: no subprocess, fast; each records the steps it was asked for.

* `FileValueBackend`, for repositories made by `build_repo`: reads the candidate's `value`
  file and writes that many node PATCH 409 lines (plus a few 200s) as the collected log;
  a `BROKEN` file fails the build. A test can replace any run's value with
  `tamper(commit, nth_run, value) -> value | None` (None: a log without data) to model
  noise or a flaky cluster. It records every step in `steps` as (step, commit).
  `PrefetchingBackend` builds ahead with it; `GrowingFileValue` and `ShapedFileValue`
  grow its log minute by minute for early verdicts.
* `FakeBackend`: one evaluation's steps, failing the ways a test asks for;
  `ReplayBackend` is it with a recorded log's clock (a log that names its launch, or not).
* `GrowingBackend`: a cluster whose log grows during the warmup, looked at as it grows.
* `SourceBackend`: a log and, beside it, the files a source metric reads (Prometheus
  snapshots, a CL2 report, processes.json), whole or garbled.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector.backends.base import BackendTraits, Candidate, sleep_steps
from bisector.collected import ProcessUsage, write_processes
from bisector.errors import BuildError, CollectError, InfraError, LaunchError
from tests.helpers.evidence import counter, snapshot, write_cl2_report, write_snapshots
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


class PrefetchingBackend(FileValueBackend):
    """Builds ahead into a 'cache' (a set); `build` takes a cached commit without building."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: set[str] = set()
        self.prefetch_calls: list[tuple[str, Path]] = []
        self.built_by_build: list[str] = []
        self.cache_hits: list[str] = []
        self.lock = threading.Lock()

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        with self.lock:
            self.prefetch_calls.append((commit, worktree))
        if (worktree / "BROKEN").exists():
            raise BuildError("BROKEN file present")
        assert worktree.is_dir() and (worktree / "value").is_file()  # its own checkout
        with self.lock:
            self.cache.add(commit)

    def prefetched(self, commit: str) -> bool:
        with self.lock:
            return commit in self.cache

    def build(self, candidate: Candidate) -> None:
        with self.lock:
            if candidate.commit in self.cache:
                self.cache.discard(candidate.commit)
                self.cache_hits.append(candidate.commit)
                return
            self.built_by_build.append(candidate.commit)
        super().build(candidate)


# -- one evaluation's steps ----------------------------------------------------------------


class FakeBackend:
    """Records each step; fails the ways a test asks for."""

    name = "fake"
    traits = BackendTraits(own_logs=True)  # writes each evaluation's log itself, like the sim

    def __init__(self, *, launch_failures: int = 0, fail: str = "", lines: str = "") -> None:
        self.launch_failures = launch_failures
        self.fail = fail
        self.lines = lines or (CONFLICT + "\n") * 5 + WRITE + "\n"
        self.steps: list[str] = []

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def build(self, candidate: Candidate) -> None:
        self.steps.append("build")
        if self.fail == "build":
            raise BuildError("make failed")

    def launch(self, candidate: Candidate) -> None:
        self.steps.append("launch")
        if self.launch_failures:
            self.launch_failures -= 1
            raise LaunchError("no cluster")

    def warmup(self, candidate: Candidate) -> None:
        self.steps.append("warmup")
        if self.fail == "interrupt":
            raise KeyboardInterrupt

    def collect(self, candidate: Candidate) -> list[Path]:
        self.steps.append("collect")
        if self.fail == "collect":
            raise CollectError("scp failed")
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "apiserver.log"
        log.write_text(self.lines)
        return [log]

    def teardown(self, candidate: Candidate) -> None:
        self.steps.append("teardown")
        if self.fail == "teardown":
            raise InfraError("delete failed")


LAUNCH = "0123456789abcdef0123456789abcdef"


def launch_line(launch: str, when: str = "0602 05:51:09") -> str:
    """The line naming launch `launch` that an instrumented apiserver logs at its start."""
    return f"I{when}.000000       7 server.go:105] bisector-launch-id={launch}\n"


class ReplayBackend(FakeBackend):
    """A local cluster replaying a recorded 2017 log: its clock is not this machine's."""

    traits = BackendTraits()


# -- logs that grow during the warmup (early verdicts) -------------------------------------


T0 = 1_496_382_660.0  # 2017-06-02 05:51:00 UTC


def patch_line(when: float, status: int) -> str:
    """A node PATCH line of a 1.7 apiserver answering `status` at `when` (epoch s)."""
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(when))
    return (
        f"I{stamp}.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
        f"(3.1ms) {status} [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]\n"
    )


class GrowingBackend:
    """A cluster whose log gains `per_step` conflicts every `step_s` of a `total_s` warmup.

    `collect` returns the log as it is when called (the warmup may have stopped early);
    `collect_fails`: the copy fails; `collect_stale`: an old, short file arrives instead.
    """

    name = "growing"
    traits = BackendTraits(own_logs=True)  # writes each evaluation's log itself, like the sim

    def __init__(
        self,
        per_step: int,
        *,
        total_s: float = 120.0,
        step_s: float = 10.0,
        collect_fails: bool = False,
        collect_stale: bool = False,
        peek_fails: bool = False,
    ) -> None:
        self.per_step = per_step
        self.total_s = total_s
        self.step_s = step_s
        self.collect_fails = collect_fails
        self.collect_stale = collect_stale
        self.peek_fails = peek_fails
        self.steps: list[str] = []
        self.elapsed = 0.0

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def build(self, candidate: Candidate) -> None:
        self.steps.append("build")

    def launch(self, candidate: Candidate) -> None:
        self.steps.append("launch")
        self._log(candidate).parent.mkdir(parents=True, exist_ok=True)
        self._log(candidate).write_text(patch_line(T0, 200))

    def _log(self, candidate: Candidate) -> Path:
        return candidate.eval_dir / "master" / "kube-apiserver.log"

    def _grow(self, candidate: Candidate, until: float) -> None:
        with self._log(candidate).open("a") as f:
            while self.elapsed < until:
                self.elapsed += self.step_s
                f.writelines(patch_line(T0 + self.elapsed, 409) for _ in range(self.per_step))
                f.write(patch_line(T0 + self.elapsed, 200))

    def warmup(self, candidate: Candidate) -> None:
        self.steps.append("warmup")
        self._grow(candidate, self.total_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        def grow(seconds: float) -> None:
            self.steps.append(f"step {self.elapsed + seconds:g}")
            self._grow(candidate, self.elapsed + seconds)

        return sleep_steps(grow, self.total_s, every_s)

    def peek(self, candidate: Candidate) -> list[Path]:
        if self.peek_fails:
            raise CollectError("ssh refused")
        return [self._log(candidate)]

    def collect(self, candidate: Candidate) -> list[Path]:
        self.steps.append("collect")
        if self.collect_fails:
            raise CollectError("scp failed")
        if self.collect_stale:
            self._log(candidate).write_text(patch_line(T0, 409) + patch_line(T0 + 5, 200))
        return [self._log(candidate)]

    def teardown(self, candidate: Candidate) -> None:
        self.steps.append("teardown")


class GrowingFileValue(FileValueBackend):
    """FileValueBackend whose log grows in 10 steps; `value` conflicts by the end."""

    def __init__(self) -> None:
        super().__init__()
        self.steps_run: dict[str, int] = {}
        self._count: dict[Path, int] = {}

    def _write(self, candidate: Candidate, count: int) -> Path:
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "kube-apiserver.log"
        value = int((candidate.worktree / "value").read_text())
        lines = [patch_line(T0, 200)]
        for k in range(1, count + 1):
            lines += [patch_line(T0 + 60 * k, 409)] * self.per_minute(value, k)
            lines += [patch_line(T0 + 60 * k, 200)]
        log.write_text("".join(lines))
        return log

    @staticmethod
    def per_minute(value: int, minute: int) -> int:
        """Conflicts written in `minute` of the run of a commit with this `value`."""
        return value // 10

    def warmup(self, candidate: Candidate) -> None:
        self._count[candidate.eval_dir] = 10

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        for k in range(1, 11):
            self._count[candidate.eval_dir] = k
            self.steps_run[candidate.commit] = k
            self._write(candidate, k)
            yield 60.0 * k

    def peek(self, candidate: Candidate) -> list[Path]:
        return [candidate.log_dir / "kube-apiserver.log"]

    def collect(self, candidate: Candidate) -> list[Path]:
        self.steps.append(("collect", candidate.commit))
        return [self._write(candidate, self._count.pop(candidate.eval_dir, 10))]


LATE = 300  # a `value` meaning: a regression that shows only after 8 of 10 minutes


class ShapedFileValue(GrowingFileValue):
    """A log growing in 10 one-minute steps, shaped by the commit's `value`:
    n < 100: n/10 conflicts a minute (good); 400: 40 a minute (bad from the start, past
    100 after 3 minutes); LATE: 2 a minute for 7 minutes, then 150 a minute (bad)."""

    @staticmethod
    def per_minute(value: int, minute: int) -> int:
        if value == LATE:
            return 2 if minute <= 7 else 150
        return value // 10


# -- the files of source metrics -----------------------------------------------------------


class SourceBackend:
    """Writes a log and, into the candidate's log dir, what `files` says."""

    name = "source"
    # Each evaluation's log is written fresh by collect (2017 times, another clock): its
    # own, as the sim's (WindowRule.own_logs); the log-belonging rule is not tested here.
    traits = BackendTraits(own_logs=True)

    def __init__(self, files: str) -> None:
        self.files = files

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def build(self, candidate: Candidate) -> None: ...
    def launch(self, candidate: Candidate) -> None: ...
    def warmup(self, candidate: Candidate) -> None: ...
    def teardown(self, candidate: Candidate) -> None: ...
    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def collect(self, candidate: Candidate) -> list[Path]:
        d = candidate.log_dir
        d.mkdir(parents=True, exist_ok=True)
        (d / "kube-apiserver.log").write_text((CONFLICT + "\n") * 3 + WRITE + "\n")
        if "prom" in self.files:
            before = snapshot(
                counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 1)])
            )
            after = snapshot(
                counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 8)])
            )
            write_snapshots(d, before, after if "garbled" not in self.files else after[:-40] + "{{")
        if "cl2" in self.files:
            write_cl2_report(d / "cl2", throughput=77.0)
        if "procs" in self.files:
            write_processes(d, [ProcessUsage("kube-apiserver", 33.0, 1 << 30, 0.0, 60.0)])
        return [d / "kube-apiserver.log"]
