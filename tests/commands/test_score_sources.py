"""`bisector score` on what a run leaves beside its log: a CL2 artifacts dir, a pair of
/metrics snapshots (or a directory holding both); each metric says its source, and the
exit codes stay git bisect run's (0 good, 1 bad, 125 skip, 128 usage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisector.entry import main
from tests.helpers.evidence import (
    counter,
    histogram,
    snapshot,
    summary_name,
    write_cl2_report,
    write_snapshots,
)

DISPATCH = "apiserver_watch_events_dispatch_duration_seconds"
NODES_TOTAL = {"group": "", "resource": "nodes", "stage": "total"}
BOUNDS = ("0.005", "0.025", "0.1", "0.5", "2.5", "+Inf")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["score", *args])
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err


def _dispatch(*counts: float) -> str:
    stage = {**NODES_TOTAL, "stage": "cacher_queue_latency"}
    buckets = dict(zip(BOUNDS, counts, strict=True))
    other = dict.fromkeys(BOUNDS, 1000.0)  # another stage: never mixed in
    return histogram(DISPATCH, [(NODES_TOTAL, buckets), (stage, other)])


def _watchers(nodes: float, reason_nodes: float) -> str:
    return counter(
        "apiserver_terminated_watchers_total",
        [
            ({"group": "", "resource": "nodes"}, nodes),
            ({"group": "", "resource": "nodes", "reason": "stalled_client"}, reason_nodes),
            ({"group": "", "resource": "pods"}, 50),
        ],
    )


@pytest.fixture
def snapshots(tmp_path: Path) -> tuple[Path, Path]:
    # Window counts of the nodes/total dispatch histogram: 100 300 360 396 400 400.
    # p99: rank 396 -> first bucket holding >= 396 is le=0.5 (396): start 0.1, 36 in it
    # (360..396), 36 into it: 0.1 + 0.4 * 36/36 = 0.5 s. That is a bound; p95: rank 380,
    # in (0.1, 0.5] holding 36, 20 into it: 0.1 + 0.4 * 20/36 = 0.32222 s = 322.222 ms.
    before = snapshot(_dispatch(20, 40, 40, 44, 50, 50), _watchers(2, 0))
    after = snapshot(_dispatch(120, 340, 400, 440, 450, 450), _watchers(9, 3))
    return write_snapshots(tmp_path / "snap", before, after)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.toml"
    path.write_text(
        "[metrics.dispatch_p95_ms]\n"
        'source = "prometheus"\n'
        f'histogram = "{DISPATCH}"\n'
        'labels = { resource = "nodes", stage = "total" }\n'
        "quantile = 0.95\n"
        'unit = "ms"\n'
        "[metrics.list_pods_p99_ms]\n"
        'source = "cl2"\n'
        'summary = "APIResponsivenessPrometheus_load_"\n'
        'labels = { Verb = "LIST", Resource = "pods", Scope = "cluster" }\n'
        'key = "Perc99"\n'
    )
    return path


def test_a_pair_of_snapshots_gives_a_quantile_and_an_increase_as_computed_by_hand(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, snapshots: tuple[Path, Path]
) -> None:
    before, after = (str(p) for p in snapshots)
    pair = ("--metrics-before", before, "--metrics-after", after)
    config = ("--config", str(_config(tmp_path)))
    code, out, _ = _run(capsys, *pair, *config, "--metric", "dispatch_p95_ms", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["value"] == pytest.approx(322.2222222)
    assert doc["source"] == "prometheus" and doc["sources"]["dispatch_p95_ms"]["from"].startswith(
        f"{before} -> {after}"
    )
    # terminated watchers of nodes: 2 -> 9 and 0 -> 3 (the +reason series): 10; pods left out.
    code, out, _ = _run(capsys, *pair, "--metric", "terminated_watchers", "--threshold", "10")
    assert code == 1
    assert "verdict: bad (terminated_watchers = 10 >= 10)" in out
    assert any(
        line.startswith("terminated_watchers: prometheus ") and "metrics-after.prom" in line
        for line in out.splitlines()
    )
    code, out, _ = _run(capsys, *pair, "--metric", "watch_dispatch_p99_ms", "--threshold", "501")
    assert code == 0 and "verdict: good (watch_dispatch_p99_ms = 500 ms < 501 ms)" in out


def test_a_directory_holding_both_snapshots(
    capsys: pytest.CaptureFixture[str], snapshots: tuple[Path, Path]
) -> None:
    directory = str(snapshots[0].parent)
    code, out, _ = _run(capsys, directory, "--metric", "terminated_watchers", "--json")
    assert code == 0 and json.loads(out)["value"] == 10.0
    code, out, _ = _run(capsys, directory)  # no --metric: every metric the files give
    assert code == 0
    assert "terminated_watchers" in out and "watch_dispatch_p99_ms" in out
    assert "scheduling_throughput: no value (no CL2 report directory" not in out  # not asked
    code, out, _ = _run(capsys, directory, "--json")
    doc = json.loads(out)
    assert doc["metrics"]["terminated_watchers"] == 10.0
    assert doc["sources"]["terminated_watchers"]["source"] == "prometheus"
    assert "no CL2 summary" in doc["unavailable"]["scheduling_throughput"]


def test_a_cl2_artifacts_dir_with_a_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    artifacts = write_cl2_report(tmp_path / "artifacts", patch_node_status_p99_ms=61.5)
    config = ("--config", str(_config(tmp_path)))
    code, out, _ = _run(capsys, str(artifacts), *config, "--metric", "list_pods_p99_ms")
    assert code == 0 and "412 ms" in out  # three figures on screen (bisector.numbers)
    code, out, _ = _run(capsys, str(artifacts), *config, "--metric", "list_pods_p99_ms", "--json")
    assert code == 0 and json.loads(out)["value"] == 412.5  # the exact value for scripts
    code, out, _ = _run(capsys, str(artifacts), *config, "--metric", "list_pods_p99_ms")
    lines = out.splitlines()
    assert (
        f"list_pods_p99_ms: cl2 {artifacts}/{summary_name('APIResponsivenessPrometheus')} Perc99"
        in lines
    )
    args = (str(artifacts), "--metric", "apiserver_patch_node_status_p99_ms", "--threshold", "60")
    assert _run(capsys, *args)[0] == 1
    # Higher is better: 100 pods/s against a threshold of 120 is bad, 150 is good.
    write_cl2_report(tmp_path / "fast", throughput=150.0)
    write_cl2_report(tmp_path / "slow", throughput=100.0)
    flags = ("--metric", "scheduling_throughput", "--threshold", "120")
    code, out, _ = _run(capsys, str(tmp_path / "slow"), *flags)
    assert code == 1 and "verdict: bad (scheduling_throughput = 100 <= 120)" in out
    code, out, _ = _run(capsys, str(tmp_path / "fast"), *flags)
    assert code == 0 and "verdict: good (scheduling_throughput = 150 > 120)" in out


@pytest.mark.parametrize(
    ("files", "metric", "why"),
    [
        ({"metrics-before.prom": "x", "metrics-after.prom": ""}, "terminated_watchers", "is empty"),
        (
            {"metrics-before.prom": "#", "metrics-after.prom": "a{b=1}"},
            "terminated_watchers",
            "text",
        ),
        ({}, "pod_startup_p99_ms", "no CL2 summary"),
        ({"SchedulingThroughput_load_x.json": "{"}, "scheduling_throughput", "not JSON"),
        ({"processes.json": "[]"}, "apiserver_cpu_s", "cannot be read"),
    ],
)
def test_missing_or_garbled_files_are_125_never_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str], metric: str, why: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code, out, _ = _run(capsys, str(tmp_path), "--metric", metric, "--threshold", "1")
    assert code == 125
    assert out.splitlines()[-1].startswith("verdict: skip (") and why in out


def test_a_directory_that_is_gone_is_125_as_a_missing_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = (str(tmp_path / "gone"), "--metric", "terminated_watchers", "--threshold", "1")
    code, out, _ = _run(capsys, *args)
    assert code == 125 and "no metrics snapshot at" in out


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--metrics-before", "b.prom", "--metric", "terminated_watchers"], "pass both"),
        (["LOG", "--metric", "terminated_watchers"], "read from two /metrics snapshots"),
        (["LOG", "--metric", "scheduling_throughput"], "ClusterLoader2 report directory"),
    ],
)
def test_usage_mistakes_are_128(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], why: str
) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text("I0602 05:51:10.000001       7 wrap.go:42] GET /healthz: (1ms) 200\n")
    code, _, err = _run(capsys, *(str(log) if a == "LOG" else a for a in args))
    assert code == 128 and why in err
