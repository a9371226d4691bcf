"""An evaluation scores a source metric from its own log directory; a missing or garbled
file there is a skip with the reason, never a value."""

from __future__ import annotations

from pathlib import Path

from bisector.backends.base import BackendTraits, Candidate
from bisector.backends.collected import ProcessUsage, write_processes
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.provenance import WindowRule
from bisector.metric_registry import MetricRegistry
from tests.helpers.evidence import counter, snapshot, write_cl2_report, write_snapshots
from tests.helpers.local_backend import CONFLICT, WRITE


class SourceBackend:
    """Writes a log and, into the candidate's log dir, what `files` says."""

    name = "source"
    # Each evaluation's log is written fresh by collect (2017 times, another clock): its
    # own, as the sim's (WindowRule.own_logs); the log-belonging rule is not tested here.
    traits = BackendTraits(own_logs=True)

    def __init__(self, files: str) -> None:
        self.files = files

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def build(self, candidate: Candidate) -> None: ...
    def launch(self, candidate: Candidate) -> None: ...
    def warmup(self, candidate: Candidate) -> None: ...
    def teardown(self, candidate: Candidate) -> None: ...
    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def collect(self, candidate: Candidate) -> list[Path]:
        d = candidate.log_dir
        d.mkdir(parents=True, exist_ok=True)
        (d / "kube-apiserver.log").write_text((CONFLICT + "\n") * 3 + WRITE + "\n")
        if "prom" in self.files:
            before = snapshot(
                counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 1)])
            )
            after = snapshot(
                counter("apiserver_terminated_watchers_total", [({"resource": "nodes"}, 8)])
            )
            write_snapshots(d, before, after if "garbled" not in self.files else after[:-40] + "{{")
        if "cl2" in self.files:
            write_cl2_report(d / "cl2", throughput=77.0)
        if "procs" in self.files:
            write_processes(d, [ProcessUsage("kube-apiserver", 33.0, 1 << 30, 0.0, 60.0)])
        return [d / "kube-apiserver.log"]


def _evaluate(tmp_path: Path, files: str, metric: str):  # type: ignore[no-untyped-def]
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    scorer = MetricRegistry().scorer(metric)
    return evaluate_candidate(
        SourceBackend(files),
        candidate,
        EvaluationSettings(metric, scorer=scorer, window=WindowRule()),
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
