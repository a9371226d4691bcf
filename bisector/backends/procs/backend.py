"""`procs`: a real kube-apiserver built from each candidate, on this machine, no docker.

Per bisection (`setup`): the harness (bisector.backends.procs.harness): the hollow-node
binary built once from `harness_commit` with the project's patch and cached per machine,
so only the system under test changes between candidates; etcd.

Per candidate: `build` makes `kube-apiserver` from the candidate's tree with the Go the
tree needs (bisector.backends.procs.builds), cached by tree id; builds ahead
(`prefetch_build`) run niced while a cluster is measured. `launch` starts the cluster and
opens the warmup (bisector.backends.procs.launch); `warmup`, `peek` and `collect` measure
it and judge whether its load ran (bisector.backends.procs.collect, load_check);
`teardown` stops everything carrying the cluster's tag (bisector.backends.procs.teardown),
the step recorded in resources.json before anything starts, for `bisector cleanup`.
`plan` renders the steps those parts run (bisector.backends.procs.dry_run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector.backends.base import BackendContext, BackendTraits, Candidate
from bisector.backends.procs import build as pb
from bisector.backends.procs import load_check as lc
from bisector.backends.procs.builds import Builds, Built
from bisector.backends.procs.collect import Window
from bisector.backends.procs.dry_run import plan_lines
from bisector.backends.procs.harness import Harness
from bisector.backends.procs.launch import Launcher
from bisector.backends.procs.options import KEYS, ProcsSettings
from bisector.backends.procs.profiles import Profiles
from bisector.backends.procs.running import Clusters, Running
from bisector.backends.procs.teardown import stop_slot
from bisector.backends.resources import ResourceRecord
from bisector.errors import LaunchError


class ProcsBackend:
    KEYS = KEYS
    name = "procs"
    traits = BackendTraits(real_time_logs=True)  # glog times are this machine's wall clock

    def __init__(
        self, context: BackendContext, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.context = context
        self.cfg = ProcsSettings.from_section(context.section)
        self.sleep = sleep
        self.record = ResourceRecord(context.run_dir)
        self.work = context.run_dir.absolute() / "procs"
        self._mark = pb.ahead_mark(context.run_dir)  # this run's builds ahead, no other's
        self.clusters = Clusters()
        self.builds = Builds(self.cfg, self.work, self._mark)
        self.harness = Harness(self.cfg, self.builds, context.base_worktree)
        self.launcher = Launcher(
            context, self.cfg, self.clusters, record=self.record, sleep=self._sleep, mark=self._mark
        )
        self.window = Window(context, self.cfg, self.clusters, self.offer, self._sleep)
        self.profiles = Profiles(self.cfg.profile_seconds, context.warmup_s)
        self._check_window()

    def _sleep(self, seconds: float) -> None:
        """`sleep` as it is when called: a test may replace it after the parts are made."""
        self.sleep(seconds)

    def offer(self) -> lc.OfferedLoad:
        """The load every cluster is set to offer (its heartbeat is known after setup)."""
        honoured = self.harness.hollow_flags.status_period_env
        return lc.OfferedLoad.of(self.cfg, status_period_honoured=honoured)

    def _check_window(self) -> None:
        """The warmup and the looks against what a count can judge (before any launch)."""
        c, offer = self.context, self.offer()
        lc.check_window(c.warmup_s, offer, c.section.file)
        lc.check_looks(c.check_every_s, c.warmup_s, offer, c.section.file)

    def cluster(self, slot: int) -> Running | None:
        """The cluster running in `slot`, from its launch to its teardown."""
        return self.clusters.get(slot)

    def built(self, commit: str) -> Built | None:
        return self.builds.built(commit)

    # -- bisection bracket ---------------------------------------------------------------
    def setup(self) -> None:
        """Build (or find in the cache) the hollow-node harness; etcd when it is `auto`."""
        self.harness.setup()
        self._check_window()  # its heartbeat is known now (a harness without the period: 10s)

    def close(self) -> None:
        """Nothing lasts across candidates but the caches."""

    # -- one evaluation ------------------------------------------------------------------
    def build(self, candidate: Candidate) -> None:
        self.builds.build(candidate)

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        self.builds.prefetch(commit, worktree)

    def prefetched(self, commit: str) -> bool:
        return self.builds.prefetched(commit)

    def launch(self, candidate: Candidate) -> None:
        built = self.builds.built(candidate.commit)
        if built is None:
            raise LaunchError(f"launch before build for {candidate.commit[:12]}")
        h = self.harness
        kubemark = h.kubemark
        if kubemark is None:
            if self.cfg.hollow_nodes > 0:
                raise LaunchError("the harness (kubemark) was not built: setup did not run")
            kubemark = Path("kubemark")  # no hollow node: never run
        self.launcher.launch(candidate, built, kubemark, h.hollow_flags, h.etcd)

    def warmup(self, candidate: Candidate) -> None:
        self._profile(candidate)
        self.window.warmup(candidate)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        self._profile(candidate)
        return self.window.warmup_steps(candidate, every_s)

    def _profile(self, candidate: Candidate) -> None:
        """The culprit's and its parent's confirmation: profiles of the warmup's end."""
        running = self.clusters.get(candidate.slot)
        if candidate.profile and running is not None:
            self.profiles.start(candidate, running.api)

    def peek(self, candidate: Candidate) -> list[Path]:
        return self.window.peek(candidate)

    def collect(self, candidate: Candidate) -> list[Path]:
        logs = self.window.collect(candidate)
        running = self.clusters.get(candidate.slot)
        if candidate.profile and running is not None:
            # The cluster still runs: the heap, beside the CPU profile. Evidence only:
            # a missing cluster here is the measurement's business (collect), not this.
            self.profiles.finish(candidate, running.api, self.builds.go_of(candidate.commit))
        return logs

    def teardown(self, candidate: Candidate) -> None:
        """Stop the slot's cluster; a failure keeps it in resources.json and raises."""
        self.profiles.stop(candidate.slot)
        stop_slot(candidate.slot, self.clusters, self.record, self.cfg.stop_grace, self._mark)

    def plan(self, candidate: Candidate) -> list[str]:
        return plan_lines(self.cfg, self.context.warmup_s, self.builds, self.harness, candidate)
