"""Did the load run? The rules that tell a warmup that measured something from one that
did not, as plain functions over what collect read: the window as it ran (`Warmup`), the
load the cluster was set to offer (`OfferedLoad`), the apiserver's /metrics at the
warmup's start and end, the load generator's counts and the processes' states.

A good-looking number measured under no load (frozen hollow nodes, a stalled load
generator, a window too short or stretched) says nothing about the code: each rule
raises CollectError, a skip saying why, or returns the load it judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.procs.load import REOPEN_AFTER_S, STATUS_EVERY_S
from bisector.backends.procs.options import ProcsSettings
from bisector.collected import METRICS_AFTER, METRICS_BEFORE, DeliveredLoad
from bisector.durations import format_duration
from bisector.errors import CollectError, ConfigError, InfraError
from bisector.metrics import prometheus as prom

# A warmup in which less than this share of the status writes the hollow nodes offer
# reached the apiserver measured no load (frozen or starved hollow nodes, a stuck load
# generator): a skip.
MIN_LOAD_FRACTION = 0.5
# A short window spans few rounds, and a loop that ran may have made one write less than
# its share (its phase): each loop that ran made at least its sure rounds, floor(its time
# / (period x (1 + ROUND_SLACK))). The hollow kubelet waits its period after each
# status round ends (2017: pkg/kubelet/kubelet.go:1297 wait.Until, sliding; v1.32.0-rc.1:
# kubelet.go:1751 wait.JitterUntil(syncNodeStatus, period, 0.04, true, ...), up to 4 %
# more), and takes time of its own to build the status; a pod watch opens again a second
# after the server closes it (load.py REOPEN_AFTER_S). So a short window needs
# min(MIN_LOAD_FRACTION of the offer, the sure rounds), judged from one sure round on: a
# frozen harness in a 15 s early verdict, or a 20 s warmup of RV-less pod watches, made
# none. Under one sure round a count cannot tell (a kubelet that ran may have made no
# write): a warmup ended that early is a skip, and a whole warmup that short is refused
# before anything starts (`check_window`): its processes' states (`not_stopped`) catch a
# SIGSTOP, not hollow nodes hung or thawed before collect, whose missing writes read as
# a good build.
ROUND_SLACK = 0.25
# A workload that ends the warmup must leave this many status periods (`long_enough`).
MIN_LOAD_PERIODS = 3.0
# A harness that does not honour HOLLOW_NODE_STATUS_PERIOD (an unpatched 1.32 kubemark):
# its heartbeat is the node Lease, renewed every 0.25 x 40 s (pkg/kubelet/kubelet.go:220
# nodeLeaseRenewIntervalFraction, pkg/kubelet/apis/config/v1beta1/defaults.go:151
# NodeLeaseDurationSeconds); the status itself is PATCHed only on change or every 5 min.
LEASE_RENEW_S = 10.0
# The load generator rewrites its status file every second (load.py STATUS_EVERY_S); a
# status this old at the warmup's end is a generator that stopped (SIGSTOP, starved):
# judged whatever the warmup's length, where its figures need one sure round of each.
LOAD_STATUS_STALE_S = 10.0
# A warmup that ran much longer than asked (the process stopped or starved meanwhile:
# a suspended terminal, SIGSTOP, a host out of CPU) measured a longer window, and every
# counter's increase grows with it: a skip past this much more than asked.
WARMUP_SLACK = 0.1
WARMUP_SLACK_S = 10.0

# The apiserver's request counter: `apiserver_request_count` until 1.14 (labels verb,
# resource, subresource, ...: apiserver/pkg/endpoints/metrics/metrics.go of 2017), then
# `apiserver_request_total`. prometheus_client's parser names a counter's samples
# `<family>_total`, so the 2017 one reads as `apiserver_request_count_total`.
REQUEST_COUNTERS = (
    "apiserver_request_count_total",
    "apiserver_request_count",
    "apiserver_request_total",
)
NODE_STATUS_WRITE = {"verb": "PATCH", "resource": "nodes", "subresource": "status"}
LEASE_RENEWAL = {"verb": "PUT", "resource": "leases"}
# The apiserver's time answering requests, per family and unit: 1.7's histogram in
# microseconds (staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go at 7043372:
# apiserver_request_latencies, "in microseconds"), request_duration_seconds since 1.14 (the
# same file at v1.32.0-rc.1).
REQUEST_TIME_SUMS = (
    ("apiserver_request_duration_seconds_sum", 1.0),
    ("apiserver_request_latencies_sum", 1e-6),
)
# What a hollow kubelet waits on in one status round (1.7 kubelet_node_status.go
# tryUpdateNodeStatus: GET the node, PATCH its status, again on a 409) and in one lease
# renewal (GET and PUT of its Lease).
STATUS_ROUND = ({"verb": "GET", "resource": "nodes", "subresource": ""}, NODE_STATUS_WRITE)
LEASE_ROUND = ({"verb": "GET", "resource": "leases"}, LEASE_RENEWAL)


@dataclass(frozen=True)
class Round:
    """One closed loop of the load (a hollow kubelet's status round, a pod watch's cycle)."""

    what: str
    period_s: float
    # The setting that shortens the period, for a refusal's fix ("" when none does).
    key: str = ""

    @property
    def sure_s(self) -> float:
        """A window in which a loop that ran made at least one round (ROUND_SLACK)."""
        return self.period_s * (1 + ROUND_SLACK)

    def describe(self) -> str:
        return f"{self.what} ({self.period_s:g}s, {self.sure_s:g}s with its jitter)"


@dataclass(frozen=True)
class OfferedLoad:
    """The load a cluster is set to offer: its hollow nodes' heartbeat and its watches."""

    nodes: int
    status_period_s: float
    # The harness reads HOLLOW_NODE_STATUS_PERIOD (the project's patches); else its
    # heartbeat is the node Lease (LEASE_RENEW_S).
    status_period_honoured: bool
    node_watchers: int
    other_watches: bool  # [[watches]]: their events are not node status writes
    # RV-less pod watches the server closes after their timeout, each opened again
    # REOPEN_AFTER_S later: their cycle; None without such watches.
    pod_watch_cycle_s: float | None = None
    # A workload runs in the warmup: it is the load (its failure is a skip of its own),
    # and hollow nodes beside it are background: their writes are not counted against
    # their offer (a workload that kept the apiserver and the 2 cores busy made a lone
    # hollow node's writes read as "the load did not run"), only whether they stood
    # still (`not_stopped`). The window's length is still held to their heartbeat.
    workload: bool = False

    @classmethod
    def of(cls, cfg: ProcsSettings, *, status_period_honoured: bool) -> OfferedLoad:
        pods = cfg.watch_load == "pods-without-rv" and cfg.watchers > 0 and cfg.watch_timeout > 0
        return cls(
            cfg.hollow_nodes,
            cfg.node_status_period,
            status_period_honoured,
            cfg.watchers,
            bool(cfg.watches),
            cfg.watch_timeout + REOPEN_AFTER_S if pods else None,
            workload=cfg.workload is not None,
        )

    @property
    def counts_node_writes(self) -> bool:
        """Whether the hollow nodes' writes are counted against their offer: there are
        some, and no workload is the load."""
        return self.nodes > 0 and not self.workload

    def heartbeat(self) -> Round:
        """What a hollow node writes each round, and how often."""
        if self.status_period_honoured:
            return Round("node status period", self.status_period_s, "node_status_period")
        return Round("node lease renewal period", LEASE_RENEW_S)

    def rounds(self) -> list[Round]:
        """The loads a window must span one sure round of: the hollow nodes' heartbeat
        (when there are hollow nodes), and the RV-less pod watches' cycle (closed by the
        server, opened again)."""
        rounds = [self.heartbeat()] if self.nodes > 0 else []
        if self.pod_watch_cycle_s is not None:
            rounds.append(Round("pod watch cycle", self.pod_watch_cycle_s, "watch_timeout"))
        return rounds

    def judgeable_after_s(self) -> float:
        """The shortest window whose load a count can judge: one sure round of each load
        (0 when no load is judged by a count)."""
        return max((r.sure_s for r in self.rounds()), default=0.0)


@dataclass(frozen=True)
class Warmup:
    """The measurement window as it ran: from the first /metrics snapshot to collect."""

    start: float
    end: float
    asked_s: float  # [run] warmup
    # How much longer the warmup's sleeps took than they asked (the process stopped or
    # starved meanwhile): its window grew by as much.
    overslept_s: float = 0.0

    @property
    def span_s(self) -> float:
        return self.end - self.start


def check_window(warmup_s: float, offer: OfferedLoad, where: str) -> None:
    """`[run] warmup` against what can be judged, before anything starts: a whole warmup
    under one sure round of a load holds no count that tells a load that ran from one
    that did not (a kubelet that ran may have written nothing yet), so hollow nodes that
    hung, or were frozen and thawed before collect, would pass as a good build."""
    for r in offer.rounds():
        if warmup_s < r.sure_s:
            shorter = f", or a shorter `backends.procs.{r.key}`" if r.key else ""
            raise ConfigError(
                f"{where}: the warmup ({format_duration(warmup_s)}: `run.warmup` or "
                f"--warmup) is shorter than one {r.describe()}: no count over so short a "
                "window tells a load that ran from a frozen one, and a metric that rests "
                f"on its writes would read good; make the warmup {math.ceil(r.sure_s)}s "
                f"or longer{shorter}"
            )


def check_looks(every_s: float | None, warmup_s: float, offer: OfferedLoad, where: str) -> None:
    """`[run] check_every` against what can be judged, before anything starts: a window
    under one round of a load cannot be judged (`not_ended_too_soon`: `check_every =
    "1ms"` made every bad commit that crossed the threshold early a skip, each paid for
    with a cluster), and a look no sooner than the warmup's end is no look at all."""
    if every_s is None:
        return
    key = f"{where}: key `run.check_every` = {every_s:g}s"
    if warmup_s > 0 and every_s >= warmup_s:
        raise ConfigError(
            f"{key} is not shorter than the warmup ({format_duration(warmup_s)}): no look "
            "would come before the warmup's end; look more often or remove the key"
        )
    for r in offer.rounds():
        if every_s < r.sure_s:
            raise ConfigError(
                f"{key} is shorter than one {r.describe()}: looks that often cannot tell "
                f"a load that ran from one that did not; look every {r.sure_s:g}s or more"
            )


def not_stretched(warmup: Warmup) -> None:
    """The warmup counts its own sleeps, so a run stopped in the middle (SIGSTOP, a
    Ctrl-Z'd terminal) ends it late: on a real cluster a 20 s warmup stopped for 60 s
    measured a 75 s window, etcd_pod_lists 1,400 where 20 s read 358-400.
    Counters grow with the window, so one much longer than asked is a skip. Judged on
    the sleeps' own overrun: reading the log between steps (early verdicts) takes
    time of its own, asked for."""
    asked = warmup.asked_s
    if warmup.overslept_s > asked * WARMUP_SLACK + WARMUP_SLACK_S:
        raise CollectError(
            f"the warmup ran {format_duration(warmup.span_s)}, not the "
            f"{format_duration(asked)} asked: the run was stopped or starved meanwhile (a "
            "suspended terminal, SIGSTOP, a host out of CPU), and every count over a longer "
            "window is larger"
        )


def generator_ran(updated: float | None, warmup: Warmup, log: Path) -> None:
    """A load generator whose status stopped changing held its watches but did nothing
    with them (frozen, starved): its load did not run. Its figures judge a stall only
    from one sure round of a watch cycle on (then 3 cycles: a short warmup with a frozen
    generator measured a bad commit as good on a real cluster); the status's age
    (`updated`, None when it wrote none) judges any warmup."""
    age = None if updated is None else warmup.end - updated
    if age is not None and age <= LOAD_STATUS_STALE_S:
        return
    said = "wrote no status" if age is None else f"last wrote its status {age:.0f}s before"
    raise CollectError(
        f"the load did not run: the watch load generator {said} the warmup's end (it "
        f"writes it every {STATUS_EVERY_S:g}s): stopped or starved; its log {log}"
    )


def long_enough(offer: OfferedLoad, warmup: Warmup, *, ended_by_workload: bool) -> None:
    """A workload that ends the warmup may end it before the load can be judged (under
    MIN_LOAD_PERIODS status periods, where `delivered` says nothing): on a real
    cluster `workload = "true"` ends it ~1 s in, and a bad commit measures 0, a good
    verdict. Such a window shows nothing: a skip."""
    if not ended_by_workload or offer.nodes == 0:
        return
    span = warmup.span_s
    need = MIN_LOAD_PERIODS * offer.heartbeat().period_s
    if span < need:
        raise CollectError(
            f"the load did not run long enough: the workload ended the warmup after "
            f"{span:.1f}s, under {MIN_LOAD_PERIODS:g} node status periods ({need:g}s), too "
            "short to tell a load that ran from one that did not; make the workload run "
            "longer"
        )


def not_ended_too_soon(offer: OfferedLoad, warmup: Warmup) -> None:
    """A warmup that ended before its time (an early verdict at `check_every`, the
    workload's end) under one sure round of a load: nothing in it can tell frozen
    hollow nodes from running ones, and their frozen load reads as a good build (fewer
    409s, fewer lists). A skip, saying how long a window must be."""
    span = warmup.span_s
    if span >= warmup.asked_s:
        return  # the whole warmup: `not_stopped` judges what no count can
    for r in offer.rounds():
        if span < r.sure_s:
            raise CollectError(
                f"the load cannot be judged: the warmup ended after {span:.1f}s of "
                f"{format_duration(warmup.asked_s)} (an early verdict, or the "
                f"workload's end), under one {r.describe()}: a load that ran may have "
                f"written nothing yet; look at the log no sooner than {r.sure_s:g}s "
                "([run] check_every)"
            )


def not_stopped(states: Mapping[str, str | None], warmup: Warmup) -> None:
    """Processes whose load no count judged (a window under one sure round, a harness
    without the counters), by name, with their state letters (/proc/PID/stat): one
    stopped (SIGSTOP, a debugger: state T or t) did not run, whatever the window's
    length."""
    stopped = [name for name, state in states.items() if state in ("T", "t")]
    if stopped:
        raise CollectError(
            f"the load did not run: {', '.join(stopped)} stopped (state T: SIGSTOP or a "
            f"debugger) at the end of a {warmup.span_s:.1f}s window its writes could not judge"
        )


def delivered(
    offer: OfferedLoad, warmup: Warmup, metrics: prom.Window | None, node_watch_events: int
) -> DeliveredLoad | None:
    """The load that ran over the warmup against what the hollow nodes offer (one
    status write per node per status period). Judged on the node status PATCHes the
    apiserver counted (`metrics`: its /metrics at the warmup's start and end), every
    answer included: a regression that answers 409s makes the kubelets try again, so
    its load reads high, where the watch events (successful writes only) would read
    low. Without that counter, on the load generator's events over the window (one per
    write on each of the min(N, W) live names). None when neither was counted, the
    warmup spans under one sure round (ROUND_SLACK: a count cannot tell), or the hollow
    nodes' writes are not the load (none, or a workload is: `counts_node_writes`)."""
    nodes, span = offer.nodes, warmup.span_s
    if not offer.counts_node_writes:
        return None
    if not offer.status_period_honoured:
        # The harness ignores the status period: its heartbeat is the Lease.
        renewals = request_count(metrics, LEASE_RENEWAL)
        if renewals is None:
            return None
        own = harness_time(nodes, span, metrics, LEASE_ROUND)
        what = "node lease renewals (the apiserver's PUT count on leases)"
        return judged(what, own, LEASE_RENEW_S, nodes, renewals)
    period = offer.status_period_s
    writes = request_count(metrics, NODE_STATUS_WRITE)
    if writes is not None:
        own = harness_time(nodes, span, metrics, STATUS_ROUND)
        what = "node status writes (the apiserver's PATCH count)"
        return judged(what, own, period, nodes, writes)
    if offer.node_watchers > 0 and not offer.other_watches:  # other watches' events differ
        live = min(nodes, offer.node_watchers)
        what = "watch events (node status writes seen by the node watches)"
        return judged(what, live * span, period, live, node_watch_events)
    return None


def pod_watch_load(offer: OfferedLoad, warmup: Warmup, reopened: int) -> DeliveredLoad | None:
    """`pods-without-rv`: the metric counts what each opening of such a watch costs,
    so watches that stopped reopening (a stalled load generator, an apiserver that
    refuses them) would read as a good build. Each of the W watches should open again
    every `watch_timeout` + 1 s (the server closes it; the generator waits a second:
    load.py REOPEN_AFTER_S); under half of that is a skip. `reopened`: the openings
    over the window. None when not judged."""
    cycle = offer.pod_watch_cycle_s
    if cycle is None:
        return None
    watchers = offer.node_watchers
    what = "pod watch openings (each RV-less watch, closed by the server, opened again)"
    return judged(what, watchers * warmup.span_s, cycle, watchers, reopened)


def judged(
    what: str, own_s: float, period_s: float, loops: int, delivered: int
) -> DeliveredLoad | None:
    """`loops` closed loops (a hollow kubelet's status round, a pod watch's cycle), one
    round each per `period_s` of the `own_s` loop-seconds they had: MIN_LOAD_FRACTION of
    that offer, or in a short window the rounds each made for sure if less (ROUND_SLACK).
    None under one sure round: a loop that ran may have made none."""
    offered = own_s / period_s
    sure = math.floor(own_s / max(loops, 1) / (period_s * (1 + ROUND_SLACK)))
    if sure < 1 or offered <= 0:
        return None
    needed = min(MIN_LOAD_FRACTION * offered, float(loops * sure))
    return DeliveredLoad(what, offered, delivered, needed / offered)


def harness_time(
    nodes: int, span_s: float, metrics: prom.Window | None, kinds: Sequence[Mapping[str, str]]
) -> float:
    """Node-seconds of the warmup the hollow kubelets had to themselves: each writes once a
    period of its OWN time and waits for the answer before the next (a closed loop), so
    what an apiserver spent answering them is not load the harness failed to offer. A
    regression that makes the apiserver slow (PATCH answers of 1.5 s at the 2017 bad
    endpoint: 240 of each node's 300 s spent waiting) cuts the writes made by as much,
    and must not read as a starved harness; frozen hollow nodes make no requests, so
    nothing is subtracted for them. Without the apiserver's latency sums, nothing is
    subtracted (the plain N x warmup)."""
    whole = nodes * span_s
    if metrics is None:
        return whole
    try:
        for name, unit in REQUEST_TIME_SUMS:
            if metrics.after.of(name):
                waited = sum(
                    prom.counter_increase(metrics, name, kind, absent_is_zero=True)
                    for kind in kinds
                )
                return max(0.0, whole - waited * unit)
    except InfraError:
        return whole
    return whole


def request_count(metrics: prom.Window | None, selector: Mapping[str, str]) -> int | None:
    """Requests of `selector` between the two /metrics snapshots; None when they cannot
    be read or count none of them (the metric sources judge those files themselves)."""
    if metrics is None:
        return None
    try:
        for name in REQUEST_COUNTERS:
            if metrics.after.of(name):
                return round(prom.counter_increase(metrics, name, selector))
    except InfraError:
        return None
    return None


def read_metrics(log_dir: Path) -> prom.Window | None:
    """The apiserver's /metrics at the warmup's start and end, as collect wrote them;
    None when either cannot be read."""
    try:
        return prom.Window(
            prom.read_snapshot(log_dir / METRICS_BEFORE),
            prom.read_snapshot(log_dir / METRICS_AFTER),
        )
    except InfraError:
        return None
