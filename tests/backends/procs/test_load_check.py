"""The load check's closed loop: a hollow kubelet writes once a period of its own time and
waits for each answer, so the time an apiserver spends answering is not load the harness
failed to offer (bisector.backends.procs.load_check.harness_time). Each rule is a plain
function over collected data: no backend, no cluster.

The figures are the 2017 bad endpoint's (kubernetes 7043372; 100 hollow nodes, status every
1 s, 16,000 node watches, 5 min warmup; /metrics before and after, 4 December 2026): its
node PATCHes took 1.5 s at the median, the kubelets made 12,116 of them, 40 % of N x warmup
/ period, and the plain rule called that run "the load did not run" although its 409s were
the regression itself. Metric names and units from
staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go at 7043372
(apiserver_request_count, apiserver_request_latencies in microseconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.procs import load_check as lc
from bisector.backends.procs.options import ProcsSettings
from bisector.collected import METRICS_AFTER, METRICS_BEFORE, DeliveredLoad
from bisector.config import Section
from bisector.errors import ConfigError

UA = "kubemark/v0.0.0 (linux/amd64) kubernetes/7043372"


def _metrics(path: Path, *, patches: int, get_us: float, patch_us: float) -> None:
    path.write_text(
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e9\n"
        "# TYPE apiserver_request_count counter\n"
        f'apiserver_request_count{{client="{UA}",code="409",contentType="application/'
        'vnd.kubernetes.protobuf",resource="nodes",subresource="status",verb="PATCH"} '
        f"{patches}\n"
        "# TYPE apiserver_request_latencies histogram\n"
        'apiserver_request_latencies_sum{resource="nodes",subresource="",verb="GET"} '
        f"{get_us:e}\n"
        'apiserver_request_latencies_sum{resource="nodes",subresource="status",verb="PATCH"} '
        f"{patch_us:e}\n"
        'apiserver_request_latencies_sum{resource="nodes",subresource="",verb="LIST"} 2.7e+08\n'
    )


def _offer(*, honoured: bool = True, **data: object) -> lc.OfferedLoad:
    """The load of a cluster of these settings (tests/helpers/procs_backend.py's world: 3
    nodes, a 1 s status period, 5 node watches, unless `data` says otherwise), its
    harness honouring HOLLOW_NODE_STATUS_PERIOD or not."""
    values: dict[str, object] = {"hollow_nodes": 3, "node_status_period": "1s", "watchers": 5}
    cfg = ProcsSettings.from_section(Section(values | data, "p.toml", "backends.procs"))
    return lc.OfferedLoad.of(cfg, status_period_honoured=honoured)


def _window(span_s: float, asked_s: float) -> lc.Warmup:
    """A warmup of `asked_s` that ran `span_s` (ended early when shorter)."""
    return lc.Warmup(1.7e9, 1.7e9 + span_s, asked_s)


def _judge(tmp_path: Path, *, patches: int, get_s: float, patch_s: float) -> DeliveredLoad:
    offer = _offer(hollow_nodes=100, node_status_period=1.0)
    log_dir = tmp_path / "logs"
    log_dir.mkdir(exist_ok=True)
    _metrics(log_dir / METRICS_BEFORE, patches=0, get_us=7.7e8, patch_us=3.5e8)
    _metrics(
        log_dir / METRICS_AFTER,
        patches=patches,
        get_us=7.7e8 + get_s * 1e6,
        patch_us=3.5e8 + patch_s * 1e6,
    )
    load = lc.delivered(offer, _window(300.0, 300.0), lc.read_metrics(log_dir), 0)
    assert load is not None
    return load


def test_a_slow_apiserver_is_a_measurement_not_a_starved_harness(tmp_path: Path) -> None:
    # 3,869 s answering the kubelets' node GETs and 20,532 s their PATCHes, over 100 nodes.
    load = _judge(tmp_path, patches=12_116, get_s=3_869, patch_s=20_532)
    assert load.ran, load.describe()
    # The harness had 30,000 - 24,401 node-seconds to itself: ~5,599 writes offered.
    assert round(load.offered) == 5_599


def test_frozen_hollow_nodes_still_did_not_run_the_load(tmp_path: Path) -> None:
    # SIGSTOP: no requests, so no answering time either; 20 % of the writes.
    load = _judge(tmp_path, patches=6_000, get_s=2.0, patch_s=10.0)
    assert not load.ran
    assert round(load.offered) == 29_988


# -- short windows: an early verdict at 15 s, a 20 s warmup of pod watches --------------


def _modern_metrics(path: Path, *, renewals: int, cpu_s: float) -> None:
    """The v1.32 families (staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go at
    v1.32.0-rc.1: apiserver_request_total, apiserver_request_duration_seconds)."""
    path.write_text(
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e9\n"
        f"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu_s}\n"
        "# TYPE apiserver_request_total counter\n"
        'apiserver_request_total{code="200",component="apiserver",dry_run="",group='
        '"coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",'
        f'version="v1"}} {renewals}\n'
        "# TYPE apiserver_request_duration_seconds histogram\n"
        'apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group='
        '"coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",'
        f'version="v1"}} {renewals * 0.002}\n'
    )


def test_an_unpatched_harness_frozen_for_a_15s_early_verdict_did_not_run(tmp_path: Path) -> None:
    # An unpatched 1.32 kubemark's heartbeat is its Lease, renewed every 10 s
    # (pkg/kubelet/kubelet.go:220 nodeLeaseRenewIntervalFraction 0.25 of 40 s): a look at
    # 15 s (check_every = "15s") spans 1.5 renewals and was not judged; 5 nodes renew at
    # least once each in it (10 s + ROUND_SLACK), a frozen harness renewed none.
    offer = _offer(honoured=False, hollow_nodes=5)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    look = _window(15.0, 60.0)
    _modern_metrics(log_dir / METRICS_BEFORE, renewals=40, cpu_s=10.0)
    _modern_metrics(log_dir / METRICS_AFTER, renewals=40, cpu_s=12.0)
    frozen = lc.delivered(offer, look, lc.read_metrics(log_dir), 0)
    assert frozen is not None and not frozen.ran, frozen
    assert "node lease renewals" in frozen.what
    _modern_metrics(log_dir / METRICS_AFTER, renewals=45, cpu_s=12.0)  # one each: it ran
    ran = lc.delivered(offer, look, lc.read_metrics(log_dir), 0)
    assert ran is not None and ran.ran, ran


def test_pod_watches_that_stopped_reopening_in_a_20s_warmup_did_not_run() -> None:
    # The adversarial pass's 20 s warmups of 200 RV-less pod watches (timeoutSeconds 10,
    # opened again 1 s later: load.py REOPEN_AFTER_S): 1.8 cycles, not judged. Each watch
    # that ran opened again at least once; none did here.
    offer = _offer(watchers=200, watch_load="pods-without-rv", watch_timeout="10s")
    warmup = _window(20.0, 20.0)
    at_start = 400  # the load generator's count of watches opened again
    stalled = lc.pod_watch_load(offer, warmup, reopened=400 - at_start)
    assert stalled is not None and not stalled.ran, stalled
    reopened = lc.pod_watch_load(offer, warmup, reopened=600 - at_start)  # once each
    assert reopened is not None and reopened.ran, reopened


# -- a workload is the load ---------------------------------------------------------------


def test_a_workloads_hollow_nodes_are_not_counted_against_their_offer(tmp_path: Path) -> None:
    # The frozen-looking count above (20 % of the writes) under a workload: the workload is
    # the load, a lone hollow node beside it background; counted, it made a run whose
    # workload kept the apiserver busy read "the load did not run".
    offer = _offer(hollow_nodes=100, node_status_period=1.0, workload="kubectl apply -f x")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    _metrics(log_dir / METRICS_BEFORE, patches=0, get_us=7.7e8, patch_us=3.5e8)
    _metrics(log_dir / METRICS_AFTER, patches=6_000, get_us=7.7e8 + 2e6, patch_us=3.5e8 + 1e7)
    window = _window(300.0, 300.0)
    assert lc.delivered(offer, window, lc.read_metrics(log_dir), 0) is None
    without = _offer(hollow_nodes=100, node_status_period=1.0)
    counted = lc.delivered(without, window, lc.read_metrics(log_dir), 0)
    assert counted is not None and not counted.ran
    # Their heartbeat still bounds how short a window can be judged at all.
    assert [r.what for r in offer.rounds()] == ["node status period"]


def test_no_hollow_node_is_no_node_load_to_judge_and_no_bound_on_looks(tmp_path: Path) -> None:
    offer = _offer(hollow_nodes=0, watchers=0, workload="true")
    assert offer.rounds() == [] and offer.judgeable_after_s() == 0.0
    assert lc.delivered(offer, _window(1.0, 60.0), None, 0) is None
    lc.not_ended_too_soon(offer, _window(1.0, 60.0))  # nothing to hold a short window to
    lc.long_enough(offer, _window(1.0, 60.0), ended_by_workload=True)
    lc.check_looks(0.5, 60.0, offer, "p.toml")


# -- a whole warmup no count can judge is refused before any launch ---------------------


def test_a_warmup_under_one_status_round_is_refused_with_its_fix() -> None:
    # A 1 s warmup at a 1 s status period: a kubelet that ran may have written nothing,
    # so only a SIGSTOP'd node (state T) was caught; a hung one, or one thawed before
    # collect, read as a good build. Refused, saying what to set.
    with pytest.raises(ConfigError) as caught:
        lc.check_window(1.0, _offer(), "p.toml")
    message = str(caught.value)
    assert message.startswith("p.toml: the warmup (1s: `run.warmup` or --warmup) is shorter "), (
        message
    )
    assert "one node status period (1s, 1.25s with its jitter)" in message
    assert message.endswith(
        "make the warmup 2s or longer, or a shorter `backends.procs.node_status_period`"
    ), message
    lc.check_window(1.25, _offer(), "p.toml")  # one sure round: judged by its counts


def test_a_warmup_under_one_pod_watch_cycle_is_refused() -> None:
    # RV-less pod watches closed by the server after 10 s, opened again 1 s later
    # (load.py REOPEN_AFTER_S): a 12 s warmup cannot tell a stalled generator from one
    # that ran (13.75 s with the jitter); 20 s is judged (the test above).
    offer = _offer(watchers=200, watch_load="pods-without-rv", watch_timeout="10s")
    with pytest.raises(ConfigError, match=r"one pod watch cycle \(11s, 13\.75s with its "):
        lc.check_window(12.0, offer, "p.toml")
    with pytest.raises(
        ConfigError, match=r"14s or longer, or a shorter `backends\.procs\.watch_timeout`"
    ):
        lc.check_window(12.0, offer, "p.toml")
    lc.check_window(20.0, offer, "p.toml")


def test_an_unpatched_harness_needs_one_lease_renewal_and_names_no_period_key() -> None:
    # Its heartbeat is the Lease (10 s): node_status_period does not change it.
    with pytest.raises(ConfigError) as caught:
        lc.check_window(10.0, _offer(honoured=False), "p.toml")
    assert "one node lease renewal period (10s, 12.5s with its jitter)" in str(caught.value)
    assert str(caught.value).endswith("make the warmup 13s or longer")
