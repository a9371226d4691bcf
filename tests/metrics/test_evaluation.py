"""An evaluation scores a source metric from its own log directory; a missing or garbled
file there is a skip with the reason, never a value."""

from __future__ import annotations

from pathlib import Path

from bisector.backends.base import Candidate
from bisector.measure.evaluation import WindowRule, evaluate_candidate
from bisector.metric_registry import MetricRegistry
from tests.helpers.fake_backends import SourceBackend


def _evaluate(tmp_path: Path, files: str, metric: str):  # type: ignore[no-untyped-def]
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    scorer = MetricRegistry().scorer(metric)
    return evaluate_candidate(
        SourceBackend(files), candidate, metric=metric, scorer=scorer, window=WindowRule()
    )


def test_source_metrics_come_from_the_evaluations_log_dir(tmp_path: Path) -> None:
    m = _evaluate(tmp_path / "a", "prom cl2 procs", "terminated_watchers")
    assert m.value == 7.0 and m.reason is None
    assert m.metrics["conflicts"] == 3  # the log is scored too (its window is judged)
    assert m.metrics["sources"]["terminated_watchers"]["source"] == "prometheus"
    assert (
        str(tmp_path / "a" / "eval" / "logs" / "metrics-after.prom")
        in (m.metrics["sources"]["terminated_watchers"]["from"])
    )
    assert _evaluate(tmp_path / "b", "cl2", "scheduling_throughput").value == 77.0
    assert _evaluate(tmp_path / "c", "procs", "apiserver_cpu_s").value == 33.0


def test_missing_or_garbled_source_files_are_a_skip_with_the_reason(tmp_path: Path) -> None:
    m = _evaluate(tmp_path / "a", "cl2", "terminated_watchers")
    assert m.value is None and m.reason is not None
    assert (
        m.reason.startswith("collect: no metrics snapshot at") and "metrics-after.prom" in m.reason
    )
    m = _evaluate(tmp_path / "b", "prom garbled", "terminated_watchers")
    assert m.value is None and m.reason is not None and "not Prometheus text format" in m.reason
    m = _evaluate(tmp_path / "c", "prom", "pod_startup_p99_ms")
    assert m.value is None and m.reason is not None and "no CL2 report directory" in m.reason
    m = _evaluate(tmp_path / "d", "prom", "apiserver_cpu_s")
    assert m.value is None and m.reason is not None and "no process measurements" in m.reason
