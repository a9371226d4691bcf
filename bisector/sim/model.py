"""A discrete-event model of a kubemark cluster's node path, writing a v1.7 apiserver log.

Actors, all on one small heap of (time, code) with code = node * 8 + kind:
* each hollow node registers (POST) during the start-up ramp, then its kubelet
  makes a status round one `status_period_s` after the last one ended: up to
  `kubelet_retries` tries, each a GET of its node (the first from the watch cache,
  the others from etcd), the node-address lookup (`RunParams.node_lookup`, see
  kubelet.py) and a status PATCH. The apiserver applies a PATCH to the node as its
  watch cache holds it (Cacher.GuaranteedUpdate starts from watchCache.GetByKey)
  and answers 409 when that copy is older than etcd's, which a stale cache
  guarantees: every retry meets the same stale copy, which is why the incident saw
  more 409s than status rounds;
* a node-problem-detector-like writer PATCHes each node every `npd_period_s`;
* the controller-manager PUTs each node once after registration (pod CIDR);
* a background ticker emits unrelated traffic once a simulated second.
Successful writes go through `NodeCacher`, whose progress lines (high-water
marks, dispatch progress, forced closes) lie in the future and are merged in.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bisector.sim.cacher import NodeCacher
from bisector.sim.glog import PID_FIELD, Clock, LogSink
from bisector.sim.kubelet import Lookup, lookup_table
from bisector.sim.profile import SimProfile
from bisector.sim.traffic import Background, NodeStrings, Stamp, latency_table, node_name

REGISTER, KUBELET, NPD, IPAM, PATCH = 0, 1, 2, 3, 4  # a node's actors: code & KIND
KIND = 7  # code = node << 3 | kind
WRAP = PID_FIELD + "wrap.go:42] "
D3 = [f"{k:03d}" for k in range(1000)]  # microsecond digits, three at a time
STARTUP_S = 2.0  # the apiserver serves before the first hollow node registers
TABLE = 4093  # size of the pre-drawn random tables the hot loop cycles through


@dataclass(frozen=True)
class RunParams:
    """Run-level settings: what the cluster is, not what the code under test does."""

    nodes: int = 5000
    duration_s: float = 1800.0
    seed: int = 0
    noise: float = 0.0  # sigma of the per-run cost jitter; also drives rare stalls
    ramp_s: float = 60.0  # hollow nodes register spread over this long
    start: datetime = datetime(2017, 6, 2, 5, 51, 0)
    git_version: str = "v1.7.0-beta.0.23+7043372d05510b"
    commit: str = "7043372d05510b13a0928af92deda6110740dd5e"
    # The load generator of a small real cluster (backend procs): node watches held on
    # names of nodes that are not in the cluster, the way the kubelets of a bigger one
    # hold theirs; the event of a node is offered to them only without the trigger index.
    extra_watchers: int = 0
    status_period_s: float | None = None  # the hollow nodes' status period (None: profile's)
    npd: bool = True  # a node-problem-detector writes each node (kubemark on GCE runs one)
    # How long each status try's node-address lookup takes (kubelet.py): none on GCE,
    # 5 or 10 s resolver timeouts for some tries on the procs backend's machine.
    node_lookup: Lookup = ()
    # The machine's dispatch cost against the 2017 GCE master the profile's costs are
    # calibrated on (its speed and the CPU share the apiserver gets): dispatch costs x this.
    # Real runs of the procs backend on a 2-core machine fit it (calibration.py).
    dispatch_slowdown: float = 1.0


@dataclass
class SimSummary:
    """What happened, as the log shows it (counts match the request lines written)."""

    nodes: int
    duration_s: float
    node_patches: int = 0  # PATCH requests on nodes (kubelet and NPD)
    conflicts: int = 0  # of which answered 409
    node_writes: int = 0  # successful POST/PUT/PATCH on nodes = node events
    status_updates: int = 0  # successful kubelet status PATCHes
    failed_status_rounds: int = 0  # kubelet rounds that gave up after all retries
    dispatched: int = 0  # node events dispatched, per the last progress line
    hwm: int = 0
    saturated_at_s: float | None = None  # first time the incoming channel was full
    lag_max_s: float = 0.0
    lag_last_s: float = 0.0
    lag_by_minute: list[float] = field(default_factory=list)  # max lag per minute
    forced_closes: int = 0
    lines: int = 0
    cost_factor: float = 1.0
    stalls: int = 0


def _stalls(rng: random.Random, params: RunParams) -> list[tuple[float, float]]:
    """Rare dispatcher pauses (GC, a noisy neighbour): about noise x 1 per minute."""
    if params.noise <= 0:
        return []
    out: list[tuple[float, float]] = []
    t = 0.0
    while True:
        t += rng.expovariate(params.noise / 60.0)
        if t >= params.duration_s:
            return out
        out.append((t, rng.uniform(0.05, 0.5)))


def simulate(profile: SimProfile, params: RunParams, log_path: Path) -> SimSummary:
    """Run the cluster for `params.duration_s` simulated seconds; write its apiserver log."""
    run = SimRun(profile, params, log_path)
    run.advance(params.duration_s)
    return run.finish()


class SimRun:
    """A simulation run in steps: the log so far is on disk at every pause.

    `advance(t)` runs the model up to simulated time `t` and flushes the log, so a
    reader sees every line dated before `t` (the cacher's progress lines included);
    `finish()` runs to the end, `stop()` ends the run where it is (an early verdict:
    the log then covers only the time simulated). Run in steps or in one go, the
    model writes the same bytes: pausing only flushes.
    """

    def __init__(self, profile: SimProfile, params: RunParams, log_path: Path) -> None:
        self.params = params
        self.elapsed_s = 0.0
        self.summary: SimSummary | None = None
        self._steps = _run(profile, params, log_path)
        next(self._steps)  # primed: waits for the first pause time

    @property
    def done(self) -> bool:
        return self.summary is not None

    def advance(self, until_s: float) -> None:
        if self.summary is not None:
            return
        until_s = min(until_s, self.params.duration_s)
        try:
            self._steps.send(until_s)
        except StopIteration as stop:
            self.summary = stop.value
        self.elapsed_s = until_s

    def finish(self) -> SimSummary:
        self.advance(self.params.duration_s)  # a pause at the end is the end: it returns
        assert self.summary is not None
        return self.summary

    def stop(self) -> SimSummary:
        """End the run at the time simulated so far; the log ends there."""
        if self.summary is None:
            try:
                self._steps.send(None)
            except StopIteration as stop:
                self.summary = stop.value
        assert self.summary is not None
        return self.summary


def _run(
    profile: SimProfile, params: RunParams, log_path: Path
) -> Generator[None, float | None, SimSummary]:
    """The model as a generator: sent a pause time, it runs to it (None: stop there)."""
    rng = random.Random(params.seed)
    cost_factor = math.exp(rng.gauss(0.0, params.noise)) if params.noise > 0 else 1.0
    if params.dispatch_slowdown <= 0:
        raise ValueError(f"dispatch_slowdown must be above zero, got {params.dispatch_slowdown}")
    stalls = _stalls(rng, params)
    n, end = params.nodes, params.duration_s
    cacher = NodeCacher(
        profile,
        n,
        cost_factor=cost_factor * params.dispatch_slowdown,
        stalls=stalls,
        extra_watchers=params.extra_watchers,
    )
    summary = SimSummary(nodes=n, duration_s=end, cost_factor=cost_factor, stalls=len(stalls))
    strings = NodeStrings(n, params.git_version, params.commit)
    background = Background(rng, strings, params.git_version, params.commit)
    # etcd watch propagation and client think times, drawn once and cycled through.
    watch_delays = [0.001 + rng.expovariate(1 / 0.004) for _ in range(TABLE)]
    read_gaps = [rng.uniform(3e-4, 1.5e-3) for _ in range(TABLE)]
    retry_gaps = [rng.uniform(2e-3, 8e-3) for _ in range(TABLE)]
    get_lat = latency_table(rng, TABLE, 1.5e-4, 9e-4)
    patch_lat = latency_table(rng, TABLE, 1.2e-3, 9e-3)
    conflict_lat = latency_table(rng, TABLE, 6e-4, 4e-3)
    # Drawn from their own stream: a run without lookups draws what it always drew.
    lookups = (
        lookup_table(random.Random(f"lookup:{params.seed}"), TABLE, params.node_lookup)
        if params.node_lookup
        else None
    )
    heap: list[tuple[float, int]] = [
        (STARTUP_S + params.ramp_s * (i + rng.random()) / n, i << 3 | REGISTER) for i in range(n)
    ]
    heap.append((1.0, -1))
    heapq.heapify(heap)
    attempts = [0] * n
    period, npd_period = params.status_period_s or profile.status_period_s, profile.npd_period_s
    tries = profile.kubelet_retries
    last_push = cacher.last_push
    clock = Clock(params.start)
    prefix = clock.prefix
    stamp = clock.stamp
    hwm_marks, dispatch_marks, close_marks = (
        cacher.hwm_marks,
        cacher.dispatch_marks,
        cacher.close_marks,
    )
    heapreplace, heappush, heappop = heapq.heapreplace, heapq.heappush, heapq.heappop
    retry_q: deque[tuple[float, int]] = deque()
    commit = cacher.commit
    cache_free_at = cacher.cache_free_at
    get_head, etcd_get_head = strings.get_head, strings.etcd_get_head
    patch_head = strings.patch_head
    ok_tail, conflict_tail, npd_tail = strings.ok_tail, strings.conflict_tail, strings.npd_tail
    patches = conflicts = status_ok = failed_rounds = 0
    c = 0  # counter into the random tables

    with LogSink(log_path) as sink:
        out = sink.pieces
        cur_sec, pre = -1, ""
        _startup_lines(stamp, params, out)
        pause = yield
        if pause is None:  # stopped before it ran
            end = 0.0
        stop_at = end if pause is None else min(pause, end)
        while True:
            if retry_q and retry_q[0][0] <= heap[0][0]:
                t, code = retry_q.popleft()
                from_retries = True
            else:
                t, code = heap[0]
                from_retries = False
            if t >= stop_at:
                # A pause before this event: the log so far is everything dated before it.
                while t >= stop_at < end:
                    _emit_marks(cacher, stop_at, stamp, out, summary)
                    _emit_closes(cacher, stop_at, stamp, out, summary)
                    sink.sync()
                    pause = yield
                    if pause is None:  # stopped early: the run ends at the pause
                        end = stop_at
                        break
                    stop_at = min(pause, end)
                if t >= end:
                    break
            if (hwm_marks and hwm_marks[0][0] <= t) or (
                dispatch_marks and dispatch_marks[0][0] <= t
            ):
                _emit_marks(cacher, t, stamp, out, summary)
            if close_marks and close_marks[0][0] <= t:
                _emit_closes(cacher, t, stamp, out, summary)
            c += 1
            if c == TABLE:
                c = 0
            if code >= 0:
                i = code >> 3
                kind = code & KIND
            else:
                i, kind = -1, -1
            if kind in (KUBELET, PATCH):
                a = attempts[i]  # this round's try number (409s so far)
                if kind == KUBELET:  # a try starts: GET the node
                    if a == 0:
                        # Try 0's GET ?resourceVersion=0 reads the watch cache under its lock,
                        # which the reflector holds while it pushes into a full incoming
                        # channel; later tries GET from etcd, and the PATCH reads the cache's
                        # store without that lock (watchCache.GetByKey): neither waits.
                        free = cache_free_at(t)
                        if free > t:
                            if from_retries:  # already taken off the retry queue
                                heappush(heap, (free, code))
                            else:
                                heapreplace(heap, (free, code))
                            continue
                    delay = lookups[c] if lookups is not None else 0.0
                    get_t = t - read_gaps[c] if delay == 0.0 else t
                    us = int(get_t * 1e6)
                    sec = us // 1_000_000
                    if sec != cur_sec:
                        cur_sec, pre = sec, "I" + prefix(sec)
                    us -= sec * 1_000_000
                    out += (
                        pre,
                        D3[us // 1000],
                        D3[us % 1000],
                        WRAP,
                        get_head[i] if a == 0 else etcd_get_head[i],
                        get_lat[c],
                        ok_tail[i],
                    )
                    if delay > 0.0:  # the PATCH follows the node-address lookup
                        patch_code = code - KUBELET + PATCH
                        if from_retries:
                            heappush(heap, (t + delay, patch_code))
                        else:
                            heapreplace(heap, (t + delay, patch_code))
                        continue
                    # no lookup delay: the PATCH is this event (the GET dated just before it)
                kcode = code - kind + KUBELET
                patches += 1
                us = int(t * 1e6)
                sec = us // 1_000_000
                if sec != cur_sec:
                    cur_sec, pre = sec, "I" + prefix(sec)
                us -= sec * 1_000_000
                if last_push[i] <= t:  # the cache holds the node's latest version
                    commit(t, i, watch_delays[c])
                    status_ok += 1
                    out += (
                        pre,
                        D3[us // 1000],
                        D3[us % 1000],
                        WRAP,
                        patch_head[i],
                        patch_lat[c],
                        ok_tail[i],
                    )
                    attempts[i] = 0
                    if from_retries:
                        heappush(heap, (t + period, kcode))
                    else:
                        heapreplace(heap, (t + period, kcode))
                else:
                    conflicts += 1
                    out += (
                        pre,
                        D3[us // 1000],
                        D3[us % 1000],
                        WRAP,
                        patch_head[i],
                        conflict_lat[c],
                        conflict_tail[i],
                    )
                    a += 1
                    if a >= tries:  # pkg/kubelet/kubelet.go: nodeStatusUpdateRetry tries
                        attempts[i] = 0
                        failed_rounds += 1
                        if from_retries:
                            heappush(heap, (t + period, kcode))
                        else:
                            heapreplace(heap, (t + period, kcode))
                    else:
                        attempts[i] = a
                        if not from_retries:
                            heappop(heap)
                        # Retries go to a FIFO, kept in time order (cheaper than the heap).
                        retry_t = t + retry_gaps[c]
                        if retry_q and retry_q[-1][0] > retry_t:
                            retry_t = retry_q[-1][0]
                        retry_q.append((retry_t, kcode))
                if len(out) >= 350_000:
                    sink.flush()
                continue
            if from_retries:  # only kubelets retry
                raise AssertionError("non-kubelet actor in the retry queue")
            if kind == NPD:
                commit(t, i, watch_delays[c])
                patches += 1
                us = int(t * 1e6)
                sec = us // 1_000_000
                if sec != cur_sec:
                    cur_sec, pre = sec, "I" + prefix(sec)
                us -= sec * 1_000_000
                out += (
                    pre,
                    D3[us // 1000],
                    D3[us % 1000],
                    WRAP,
                    patch_head[i],
                    patch_lat[c],
                    npd_tail[i],
                )
                heapreplace(heap, (t + npd_period * (0.98 + 0.04 * rng.random()), code))
            elif kind == REGISTER:
                commit(t, i, watch_delays[c])
                cacher.kubelets += 1  # the kubelet starts watching its node
                out.append(
                    f"I{stamp(t)}wrap.go:42] POST /api/v1/nodes: ({patch_lat[c]}) 201 "
                    f"[[{strings.kubelet_ua}] {strings.address[i]}]\n"
                )
                background.on_register(t, i, stamp, out)
                heapreplace(heap, (t + period * rng.random(), i << 3 | KUBELET))
                if params.npd:
                    heapq.heappush(heap, (t + npd_period * rng.random(), i << 3 | NPD))
                heapq.heappush(heap, (t + rng.uniform(0.05, 1.0), i << 3 | IPAM))
            elif kind == IPAM:  # the controller-manager assigns the node's pod CIDR
                commit(t, i, watch_delays[c])
                out.append(
                    f"I{stamp(t)}wrap.go:42] PUT /api/v1/nodes/{node_name(i)}: ({patch_lat[c]}) "
                    f"200 {background.controller_manager}"
                )
                heapq.heappop(heap)
            else:
                background.tick(t, cacher.kubelets, stamp, out)
                heapreplace(heap, (t + 1.0, code))
        _emit_marks(cacher, end, stamp, out, summary)
        _emit_closes(cacher, end, stamp, out, summary)
    summary.node_patches = patches
    summary.conflicts = conflicts
    summary.status_updates = status_ok
    summary.failed_status_rounds = failed_rounds
    summary.node_writes = cacher.events
    summary.hwm = cacher.hwm
    summary.saturated_at_s = cacher.saturated_at
    summary.lines = sink.written
    summary.duration_s = end
    return summary


def _startup_lines(stamp: Stamp, params: RunParams, out: list[str]) -> None:
    out.append(f"I{stamp(0.0012)}server.go:112] Version: {params.git_version}\n")
    out.append(f"I{stamp(0.35)}cacher.go:195] Starting watch cache for *api.Node\n")
    out.append(f"I{stamp(0.36)}cacher.go:195] Starting watch cache for *api.Pod\n")
    out.append(f"I{stamp(1.2)}serve.go:79] Serving securely on 0.0.0.0:443\n")


def _emit_marks(
    cacher: NodeCacher, t: float, stamp: Stamp, out: list[str], summary: SimSummary
) -> None:
    """Write the cacher's high-water-mark and dispatch-progress lines due by `t`, in order."""
    hwm, dispatch = cacher.hwm_marks, cacher.dispatch_marks
    while (hwm and hwm[0][0] <= t) or (dispatch and dispatch[0][0] <= t):
        if hwm and hwm[0][0] <= t and (not dispatch or hwm[0][0] <= dispatch[0][0]):
            when, queued = hwm.popleft()
            out.append(
                f"I{stamp(when)}cacher.go:566] cacher (*api.Node): {queued} objects queued "
                "in incoming channel.\n"
            )
            continue
        when, k, lag = dispatch.popleft()
        out.append(f"E{stamp(when)}cacher.go:610] AAA: dispatching event nr {k}\n")
        summary.dispatched = k
        summary.lag_last_s = lag
        summary.lag_max_s = max(summary.lag_max_s, lag)
        minute = int(when // 60)
        per_minute = summary.lag_by_minute
        while len(per_minute) <= minute:
            per_minute.append(0.0)
        per_minute[minute] = max(per_minute[minute], lag)


def _emit_closes(
    cacher: NodeCacher, t: float, stamp: Stamp, out: list[str], summary: SimSummary
) -> None:
    closes = cacher.close_marks
    while closes and closes[0][0] <= t:
        when, count = closes.popleft()
        line = (
            f"I{stamp(when)}cacher.go:876] Forcing watcher close due to unresponsiveness: "
            "*api.Node\n"
        )
        out.extend([line] * count)
        summary.forced_closes += count
