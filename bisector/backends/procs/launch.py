"""Launching one candidate's cluster: etcd, the candidate's apiserver (and components),
the watch load generator and N hollow nodes (bisector.backends.procs.cluster), each
waited for in turn: /healthz ok, the apiserver reporting the candidate's commit, W
watches open (before any node exists, so opening them costs every candidate the same), N
nodes Ready. The warmup starts there: the first /metrics snapshot and CPU sample, then
the workload, if any.

`cluster_steps` makes every command of a cluster once: `Launcher.launch` runs them and
`plan` prints them. The teardown step is recorded in resources.json before anything
starts, for `bisector cleanup`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, Candidate
from bisector.backends.procs import api as pa
from bisector.backends.procs import build as pb
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import flags as pf
from bisector.backends.procs import processes as pp
from bisector.backends.procs import workload as pw
from bisector.backends.procs.builds import Built
from bisector.backends.procs.options import ProcsSettings
from bisector.backends.procs.running import (
    Clusters,
    Running,
    alive_or_raise,
    count,
    load_figures,
    snapshot,
)
from bisector.backends.resources import Resource, ResourceRecord
from bisector.backends.steps import Step, run_step, tail
from bisector.collected import CL2_REPORT_DIR
from bisector.dirs import write_private
from bisector.durations import format_duration
from bisector.errors import BisectorError, LaunchError

# A launch waits for four things in turn (etcd, the apiserver, the watches, the nodes):
# polled each quarter second, not each second, that is ~1.5 s less per launch.
POLL_S = 0.25
# Hollow nodes started by one bash each (a command line per node: 25 stay far below the
# 128 KiB a single argument may take, MAX_ARG_STRLEN).
HOLLOW_BATCH = 25
ETCD_READY_S = 30.0


@dataclass(frozen=True)
class Spawn:
    """A step that starts processes in the background, what to call them in an error,
    and how many pids it prints."""

    step: Step
    what: str
    count: int = 1


@dataclass(frozen=True)
class ClusterSteps:
    """Every command that starts one cluster, in the order they run."""

    etcd: Spawn
    apiserver: Spawn
    components: tuple[Spawn, ...]  # one per `built.components`, on its port
    load: Spawn | None  # the watch load generator, when there are watches
    hollow: tuple[Spawn, ...]  # the hollow nodes, HOLLOW_BATCH to a bash
    workload: Spawn | None  # at the warmup's start


def watch_count(cfg: ProcsSettings) -> int:
    """Every watch the load generator holds: the node watches and the other specs'."""
    return cfg.watchers + sum(spec.count for spec in cfg.watches)


def serves_securely(cfg: ProcsSettings, worktree: Path) -> bool:
    if cfg.serving != "auto":
        return cfg.serving == "secure"
    return pb.go_needs(worktree).modules  # module-era trees have no insecure port


def cluster_steps(
    cfg: ProcsSettings,
    layout: pc.Layout,
    candidate: Candidate,
    *,
    built: Built,
    kubemark: Path,
    hollow_flags: pf.HollowFlags,
    etcd: str,
) -> ClusterSteps:
    """The cluster's commands for `layout`, with the apiserver's flags read from the
    candidate's tree and the hollow nodes' from the harness's (`hollow_flags`)."""
    files = layout.files
    api_flags = pf.ApiFlags.from_tree(candidate.worktree)
    api = pf.apiserver_cmd(cfg, built.binary, layout, api_flags)
    components = tuple(
        Spawn(
            pc.daemon_step(
                pf.component_cmd(name, binary, layout, port), files.component_log(name), layout
            ),
            name,
        )
        for (name, binary), port in zip(built.components, layout.ports.components, strict=True)
    )
    load = None
    if watch_count(cfg):
        s = pc.daemon_step(pf.load_cmd(cfg, layout), files.load_log, layout)
        load = Spawn(s, "the watch load generator")
    daemons = [
        pc.Daemon(
            pf.hollow_cmd(kubemark, layout, i, hollow_flags),
            files.hollow_log(i),
            tuple(pf.hollow_env(cfg, layout, i).items()),
        )
        for i in range(cfg.hollow_nodes)
    ]
    hollow = tuple(
        Spawn(
            pc.daemons_step(daemons[first : first + HOLLOW_BATCH], layout),
            f"hollow nodes {first}-{min(first + HOLLOW_BATCH, len(daemons)) - 1}",
            len(daemons[first : first + HOLLOW_BATCH]),
        )
        for first in range(0, len(daemons), HOLLOW_BATCH)
    )
    workload = None
    if cfg.workload is not None:
        workload = Spawn(pw.workload_step(cfg.workload, layout, candidate), "the workload")
    return ClusterSteps(
        Spawn(pc.daemon_step(pf.etcd_cmd(cfg, layout, etcd), files.etcd_log, layout), "etcd"),
        Spawn(pc.daemon_step(api, files.apiserver_log, layout), "kube-apiserver"),
        components,
        load,
        hollow,
        workload,
    )


def slot_prefix(slot: int) -> str:
    """The resources.json ids of a slot's clusters: one id per launch, so a record lives
    until its own teardown succeeds, and a later launch in the same slot never overwrites
    (or removes) a record left by a failed one."""
    return f"procs/slot-{slot}/"


class Launcher:
    """Starts a candidate's cluster in its slot and opens the warmup."""

    def __init__(
        self,
        context: BackendContext,
        cfg: ProcsSettings,
        clusters: Clusters,
        *,
        record: ResourceRecord,
        sleep: Callable[[float], None],
        mark: str,
    ) -> None:
        self.context = context
        self.cfg = cfg
        self.clusters = clusters
        self.record = record
        self.sleep = sleep
        self.mark = mark  # this run's builds ahead step back while a cluster runs

    def layout(self, candidate: Candidate, ports: pc.Ports) -> pc.Layout:
        tag = f"{self.context.run_dir.name}-{candidate.slot}-{uuid.uuid4().hex[:10]}"
        root = self.cfg.tmpdir / f"bisector-procs-{tag[-10:]}"
        return pc.Layout(
            tag,
            root,
            pc.ClusterFiles.under(candidate.eval_dir),
            ports,
            serves_securely(self.cfg, candidate.worktree),
        )

    def launch(
        self, candidate: Candidate, built: Built, kubemark: Path, flags: pf.HollowFlags, etcd: str
    ) -> None:
        cfg = self.cfg
        try:
            ports = pc.Ports.pick(cfg.hollow_nodes, components=len(cfg.components))
        except OSError as exc:
            raise LaunchError(f"no free loopback ports for the cluster: {exc}") from None
        layout = self.layout(candidate, ports)
        nodes = cfg.hollow_nodes
        what = f"local cluster {layout.tag} (etcd, kube-apiserver, {nodes} hollow nodes)"
        stop = pc.stop_step(layout, cfg.stop_grace)
        # Recorded before anything starts: a crash from here on is found by `bisector cleanup`.
        resource_id = f"{slot_prefix(candidate.slot)}{layout.tag}"
        self.record.add(Resource(resource_id, "procs", what, (stop,)))
        # A cluster runs: this run's builds ahead step back.
        pb.reprioritize(cfg.prefetch_nice, self.mark)
        secure = layout.secure
        running = Running(layout, pa.Api(layout.server), resource_id)
        self.clusters.add(candidate.slot, running)  # the teardown's from here on
        try:
            steps = cluster_steps(
                cfg, layout, candidate, built=built, kubemark=kubemark, hollow_flags=flags,
                etcd=etcd,
            )  # fmt: skip
            _keep_earlier_attempt(layout.files.directory)
            layout.files.directory.mkdir(parents=True)
            layout.root.mkdir(mode=0o700, parents=True)
            token = pc.write_credentials(layout) if secure else None
            running.api = pa.Api(layout.server, layout.credentials.ca if secure else None, token)
            state = {"tag": layout.tag, "root": str(layout.root), "server": layout.server}
            layout.files.state.write_text(json.dumps(state, indent=1) + "\n")
            write_private(layout.files.kubeconfig, pc.kubeconfig_text(layout, token))
            self._start_etcd(running, steps.etcd)
            self._start_apiserver(running, steps.apiserver, built, candidate.commit)
            self._start_components(running, steps.components, built)
            # The watches first, while no node exists and no event flows: opening 16,000
            # costs every candidate the same (after the nodes, a bad build took minutes to
            # register them, its dispatcher holding the cacher's lock for each event).
            self._start_load(running, steps.load)
            self._start_hollow_nodes(running, steps.hollow)
            self._start_warmup(running, candidate, steps.workload)
        except proc.CommandError as exc:
            reason = f"`{exc.cmd[-1][:60]}` failed ({exc.why}): {tail(exc)}"
            raise _launch_failed(layout, reason) from None
        except (OSError, BisectorError) as exc:  # a full disk, a tmpdir that went away
            raise _launch_failed(layout, f"cannot write the cluster's files: {exc}") from None
        except LaunchError as exc:
            raise _launch_failed(layout, exc.reason) from None

    def _spawn(self, s: Spawn) -> list[int]:
        try:
            out = run_step(s.step).stdout.strip().splitlines()
        except proc.CommandError as exc:
            # Said by what it started (`hollow nodes 25-49`), not by its script's first
            # characters (`rm -f /dev/shm/...`): the daemons it started go at the teardown.
            raise LaunchError(f"starting {s.what} failed ({exc.why}): {tail(exc)}") from None
        pids = out[-s.count :]
        if len(pids) < s.count or not all(p.isdigit() for p in pids):
            raise LaunchError(f"starting {s.what} printed no pid ({out!r})")
        return [int(p) for p in pids]

    def _wait(self, running: Running, what: str, seconds: float, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + seconds
        while True:
            alive_or_raise(running, LaunchError, f"while waiting for {what}")
            if ready():
                return
            if time.monotonic() >= deadline:
                raise LaunchError(f"{what}: not after {format_duration(seconds)}")
            self.sleep(POLL_S)

    def _start_etcd(self, running: Running, s: Spawn) -> None:
        running.pids["etcd"] = self._spawn(s)[0]
        health = pa.Api(f"http://127.0.0.1:{running.layout.ports.etcd_client}")
        self._wait(
            running,
            "etcd healthy",
            ETCD_READY_S,
            lambda: b'"true"' in (health.try_get("/health") or b""),
        )

    def _start_apiserver(self, running: Running, s: Spawn, built: Built, commit: str) -> None:
        running.pids["kube-apiserver"] = self._spawn(s)[0]
        self._wait(
            running,
            "kube-apiserver /healthz ok",
            self.cfg.ready_timeout,
            lambda: (running.api.try_get("/healthz") or b"").strip() == b"ok",
        )
        # The binary is the build of the candidate's tree (the cache's key); it reports
        # the commit it was stamped with, which for a tree another commit built first is
        # that commit. Anything else (no gitCommit at all, another commit) is not ours.
        served = pa.served_commit(running.api.try_get("/version") or b"")
        if served != built.stamped:
            same_tree = "" if built.stamped == commit else f" (built as {built.stamped[:12]})"
            raise LaunchError(
                f"the apiserver answering reports commit {served!r}, not "
                f"{commit[:12]}{same_tree}: another apiserver on the port, or a binary of "
                "another tree"
            )

    def _start_components(self, running: Running, steps: tuple[Spawn, ...], built: Built) -> None:
        """[backends.procs] components, each until its /healthz is ok."""
        names = [name for name, _ in built.components]
        for name, s, port in zip(names, steps, running.layout.ports.components, strict=True):
            running.pids[name] = self._spawn(s)[0]
            self._wait(
                running,
                f"{name} /healthz ok",
                self.cfg.ready_timeout,
                functools.partial(pa.component_healthy, port),
            )

    def _start_load(self, running: Running, s: Spawn | None) -> None:
        if s is None:
            return
        want = watch_count(self.cfg)
        running.pids["watch-load"] = self._spawn(s)[0]
        what = "node watches" if not self.cfg.watches else "watches"
        status = running.layout.files.load_status

        def opened() -> bool:
            opened = load_figures(status).get("opened", 0)
            return isinstance(opened, int) and opened >= want

        self._wait(running, f"{want} {what} open", self.cfg.ready_timeout, opened)

    def _start_hollow_nodes(self, running: Running, batches: tuple[Spawn, ...]) -> None:
        layout = running.layout
        layout.files.hollow_log(0).parent.mkdir(parents=True, exist_ok=True)
        for i in range(self.cfg.hollow_nodes):
            layout.hollow_root(i).mkdir(parents=True, exist_ok=True)
        for s in batches:
            running.hollow += self._spawn(s)
        want = self.cfg.hollow_nodes
        seen = [0]

        def all_ready() -> bool:
            seen[0] = pa.ready_hollow_nodes(running.api.try_get("/api/v1/nodes") or b"")
            return seen[0] >= want

        try:
            self._wait(running, f"{want} hollow nodes Ready", self.cfg.ready_timeout, all_ready)
        except LaunchError as exc:
            raise LaunchError(f"{exc.reason} (only {seen[0]} of {want} were)") from None

    def _start_warmup(self, running: Running, candidate: Candidate, workload: Spawn | None) -> None:
        """The measurement window opens: first /metrics snapshots and CPU sample, then the
        workload, if any."""
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        snapshot(running, candidate.log_dir, "before", LaunchError)
        running.warmup_start = time.time()
        running.before = pp.sample(list(running.all_pids().values()), running.warmup_start)
        figures = load_figures(running.layout.files.load_status)
        running.events_at_start = count(figures, "events")
        running.reopened_at_start = count(figures, "reopened")
        if workload is not None:
            (candidate.log_dir / CL2_REPORT_DIR).mkdir(exist_ok=True)
            running.workload = self._spawn(workload)[0]


def _keep_earlier_attempt(directory: Path) -> None:
    """A launch attempt again: the failed one's files move to `cluster.failed-K`, so its
    evidence stays and nothing of it (a status file saying 16,000 watches are open) can
    be read as this attempt's."""
    if not directory.exists():
        return
    k = 1
    while directory.with_name(f"{directory.name}.failed-{k}").exists():
        k += 1
    directory.rename(directory.with_name(f"{directory.name}.failed-{k}"))


def _launch_failed(layout: pc.Layout, reason: str) -> LaunchError:
    """The reason, also in `cluster/launch-error.txt` (a retried attempt's is kept there)."""
    with contextlib.suppress(OSError):
        (layout.files.directory / "launch-error.txt").write_text(reason + "\n")
    return LaunchError(reason)
