"""The local backend's `workload` (the warmup is the workload: it ends when the workload
ends; its report dir is the run's CL2 report) and `metrics` (/metrics at the warmup's start
and before collect), end to end through a real bisection."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.local import LocalBackend
from bisector.bisection.pipeline import run_bisection
from bisector.config import Section
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.evidence import counter, pod_startup, snapshot
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

# A request line stamped with the wall clock (glog header: no year, it comes from the mtime).
_LOG_LINE = (
    'echo "$(date -u +"I%m%d %H:%M:%S.%6N")       7 wrap.go:42] '
    'GET /api/v1/nodes: (1ms) 200 [[kubelet] 10.0.0.1:1]" >> "$BISECTOR_LOG"'
)


def _summary(p99: float) -> str:
    return shlex.quote(json.dumps(pod_startup(p99)))


def _config(directory: Path, *, workload_fails: bool = False) -> Path:
    """Good trees (value 0) run their workload 4x faster than bad ones (value 1), and
    report pod startup p99 2 s against 8 s in the CL2 summary they write."""
    workload = (
        'if [ "$(cat value)" = 1 ]; then sleep 1.6; p="$BAD"; else sleep 0.4; p="$GOOD"; fi; '
        f"{_LOG_LINE}; "
        'echo "$p" > "$BISECTOR_REPORT_DIR/PodStartupLatency_PodStartupLatency_load_'
        '$(date -u +%Y-%m-%dT%H:%M:%SZ).json"'
    )
    if workload_fails:
        workload = 'echo "clusterloader2: test failed: 3 of 50 namespaces" >&2; exit 1'
    values = f"GOOD={_summary(2000)}; BAD={_summary(8000)}; "
    launch = 'mkdir -p "$(dirname "$BISECTOR_LOG")"; ' + _LOG_LINE
    path = directory / "bisector.toml"
    lines = [
        "[run]",
        'backend = "local"',
        'metric = "pod_startup_p99_ms"',
        "[backends.local]",
        'timeout = "1m"',
        f"launch = {json.dumps(launch)}",
        f"workload = {json.dumps(values + workload)}",
        f"collect = {json.dumps(_LOG_LINE)}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_a_workload_whose_good_trees_finish_4x_faster_names_its_culprit(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [0] * 5 + [1] * 5)
    settings = settings_for(
        _config(tmp_path), good=built.mainline[0], bad=built.mainline[-1], repo=built.path
    )
    out = io.StringIO()
    report = run_bisection(settings, progress=PlainProgress(out))
    assert report.culprit is not None and report.confirmed, out.getvalue()
    assert report.culprit.commit == built.mainline[5]
    assert report.threshold is not None and 2000 < report.threshold.value < 8000


def test_a_workload_that_fails_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    fails = 'echo "clusterloader2: 3 of 50 namespaces failed" >&2; exit 1'
    config = Section({"timeout": "1m", "launch": "true", "collect": "true", "workload": fails})
    backend = LocalBackend(BackendContext(config, tmp_path))
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    from bisector.errors import CollectError

    try:
        backend.warmup(candidate)
    except CollectError as exc:
        assert "workload failed" in exc.reason and "3 of 50 namespaces failed" in exc.reason
    else:
        raise AssertionError("a failed workload must be a skip")
    assert not backend.traits.waits_warmup


def test_metrics_snapshots_land_where_the_prometheus_source_reads_them(tmp_path: Path) -> None:
    before = snapshot(counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 1)]))
    after = snapshot(counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 6)]))
    (tmp_path / "n").write_text("0")
    script = (
        "n=$(cat n); echo $((n + 1)) > n; "
        f'if [ "$n" = 0 ]; then printf %s {shlex.quote(before)}; '
        f'else printf %s {shlex.quote(after)}; fi > "$BISECTOR_METRICS"'
    )
    config = Section({"launch": "true", "metrics": script,
                      "collect": 'echo x > "$BISECTOR_LOG"'})  # fmt: skip
    backend = LocalBackend(BackendContext(config, tmp_path, warmup_s=0.0))
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    backend.warmup(candidate)
    backend.collect(candidate)
    from bisector.metric_registry import MetricRegistry
    from bisector.metrics.readings import Evidence, read_metric

    metric = MetricRegistry().source_metric("terminated_watchers")
    assert metric is not None
    assert read_metric(metric, Evidence.in_log_dir(candidate.log_dir)).value == 5.0
    assert backend.traits.waits_warmup
