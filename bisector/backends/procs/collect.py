"""The measurement window of a launched cluster: the warmup (whole, or in steps between
which the run reads the log so far), then `collect`: the apiserver log so far,
`metrics-after.prom`, `processes.json` (CPU seconds and peak RSS over the warmup) and
the load generator's figures into the log directory, and the load checks
(bisector.backends.procs.load_check) on what was read. A process that died meanwhile, a
workload that failed, or a load that did not run makes it a skip.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import load_check as lc
from bisector.backends.procs import processes as pp
from bisector.backends.procs import workload as pw
from bisector.backends.procs.options import ProcsSettings
from bisector.backends.procs.running import (
    Clusters,
    Running,
    alive_or_raise,
    count,
    load_figures,
    snapshot,
)
from bisector.collected import write_load, write_processes
from bisector.errors import CollectError
from bisector.orphans import process_state

LOG_NAME = "kube-apiserver.log"
LOAD_FIGURES = "watch-load.json"
LIVENESS_EVERY_S = 5.0  # how often the warmup checks that every process still runs
WORKLOAD_EVERY_S = 1.0  # how often, when the workload's end ends the warmup


class Window:
    """Warmup and collect of the clusters in `clusters`; `offer` is the load they are
    set to offer (known once the harness is ready)."""

    def __init__(
        self,
        context: BackendContext,
        cfg: ProcsSettings,
        clusters: Clusters,
        offer: Callable[[], lc.OfferedLoad],
        sleep: Callable[[float], None],
    ) -> None:
        self.context = context
        self.cfg = cfg
        self.clusters = clusters
        self.offer = offer
        self.sleep = sleep

    # -- warmup --------------------------------------------------------------------------
    def warmup(self, candidate: Candidate) -> None:
        running = self.clusters.of(candidate, CollectError)
        self._wait_alive(running, self.context.warmup_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them;
        a workload that ends the warmup ends the steps."""
        running = self.clusters.of(candidate, CollectError)
        total, elapsed, every_s = self.context.warmup_s, 0.0, max(every_s, 1e-3)
        # No look before every load made one sure round: a verdict from an earlier look
        # could not be judged (load_check.not_ended_too_soon) and would only be a skip.
        first = max(every_s, self.offer().judgeable_after_s())
        while elapsed < total:
            chunk = min(first if elapsed == 0 else every_s, total - elapsed)
            done = self._wait_alive(running, chunk)
            elapsed += chunk
            yield elapsed
            if done:
                return

    def peek(self, candidate: Candidate) -> list[Path]:
        """The apiserver's own log, growing: reading it does not disturb the cluster."""
        running = self.clusters.of(candidate, CollectError)
        path = running.layout.files.apiserver_log
        try:
            return [path] if path.stat().st_size else []
        except OSError as exc:
            raise CollectError(f"the apiserver log cannot be read: {exc}") from None

    def _wait_alive(self, running: Running, seconds: float) -> bool:
        """Sleep `seconds`, checking every few seconds that every process still runs and
        the workload has not failed; True when the workload's end ends the warmup."""
        ends = self.cfg.workload_ends_warmup and running.workload is not None
        every = WORKLOAD_EVERY_S if ends else LIVENESS_EVERY_S
        left = seconds
        while left > 0:
            chunk = min(every, left)
            asleep = time.monotonic()
            self.sleep(chunk)
            running.overslept_s += max(0.0, time.monotonic() - asleep - chunk)
            left -= chunk
            alive_or_raise(running, CollectError, "during the warmup")
            if _workload_done(running) and ends:
                return True
        return False

    # -- collect -------------------------------------------------------------------------
    def collect(self, candidate: Candidate) -> list[Path]:
        running = self.clusters.of(candidate, CollectError)
        alive_or_raise(running, CollectError, "before the end of the warmup")
        try:
            return self._collect(running, candidate.log_dir)
        except OSError as exc:
            raise CollectError(f"cannot write the collected files: {exc}") from None

    def _collect(self, running: Running, log_dir: Path) -> list[Path]:
        end = time.time()
        warmup = lc.Warmup(running.warmup_start, end, self.context.warmup_s, running.overslept_s)
        lc.not_stretched(warmup)
        log_dir.mkdir(parents=True, exist_ok=True)
        _workload_done(running)  # one that failed is a skip, whatever else ran
        snapshot(running, log_dir, "after", CollectError)
        self._end_workload(running, log_dir)
        usages = [pp.usage(name, [pid], running.before, end) for name, pid in running.pids.items()]
        usages.append(pp.usage("hollow-nodes", running.hollow, running.before, end))
        write_processes(log_dir, usages)
        figures = load_figures(running.layout.files.load_status)
        (log_dir / LOAD_FIGURES).write_text(json.dumps(figures, indent=1) + "\n")
        log_file = log_dir / LOG_NAME
        shutil.copyfile(running.layout.files.apiserver_log, log_file)
        if not log_file.stat().st_size:
            raise CollectError("the apiserver log is empty")
        self._judge_load(running, warmup, log_dir, figures)
        return [log_file]

    def _judge_load(
        self, running: Running, warmup: lc.Warmup, log_dir: Path, figures: dict[str, object]
    ) -> None:
        """The load checks, in order, on what was collected; the node load judged is
        written beside the log (a skip's evidence too)."""
        offer = self.offer()
        if "watch-load" in running.pids:
            updated = figures.get("updated")
            at = float(updated) if isinstance(updated, int | float) else None
            lc.generator_ran(at, warmup, running.layout.files.load_log)
        ended = self.cfg.workload_ends_warmup and pw.ended(running.layout) is not None
        lc.long_enough(offer, warmup, ended_by_workload=ended)
        lc.not_ended_too_soon(offer, warmup)
        events = max(0, count(figures, "events") - running.events_at_start)
        load = lc.delivered(offer, warmup, lc.read_metrics(log_dir), events)
        if load is not None:
            write_load(log_dir, load)
            if not load.ran:
                raise CollectError(f"the load did not run: {load.describe()}")
        reopened = max(0, count(figures, "reopened") - running.reopened_at_start)
        pods = lc.pod_watch_load(offer, warmup, reopened)
        if pods is not None and not pods.ran:
            raise CollectError(f"the watch load did not run: {pods.describe()}")
        # What no count judged: whether its processes stood still (a stopped generator's
        # status reads stale only after LOAD_STATUS_STALE_S; its reopen count may judge it).
        unjudged = ["watch-load"] if pods is None else []
        if load is None:
            unjudged += [f"{pc.HOLLOW_PREFIX}{i}" for i in range(len(running.hollow))]
        pids = running.all_pids()
        lc.not_stopped({n: process_state(pids[n]) for n in unjudged if n in pids}, warmup)

    def _end_workload(self, running: Running, log_dir: Path) -> None:
        """The warmup is over: a workload still running is stopped (what it had left to do
        is outside the window); its output is kept beside the log."""
        if running.workload is None:
            return
        if pw.ended(running.layout) is None:
            pw.stop(running.workload, self.cfg.stop_grace)
        running.workload = None
        source = pw.log_of(running.layout)
        if source.is_file():
            shutil.copyfile(source, log_dir / pw.LOG)


def _workload_done(running: Running) -> bool:
    """Whether the workload has ended well; one that failed is a skip with its output."""
    if running.workload is None:
        return False
    how = pw.ended(running.layout)
    if how is None:
        return False
    if not how.ok:
        raise CollectError(pw.failure(running.layout, how))
    return True
