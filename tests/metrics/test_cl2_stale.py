"""A CL2 summary written before this launch is another launch's (issue 30, item 10).

CL2 names each summary with the time it wrote it, last, as Go's time.RFC3339
(kubernetes/perf-tests clusterloader2/pkg/test/simple_test_executor.go, ExecuteTest:
strings.Join([SummaryName, conf.Name+distinctor, SummaryTime().Format(time.RFC3339)], "_")).
A summary dated before the launch (less the clock allowance) was left by an earlier
launch in the report dir: "stale metrics", a skip, as a stale log or /metrics page is.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.metric_registry import MetricRegistry
from bisector.metrics.cl2 import summary_time
from tests.helpers.evidence import cl2_summaries, summary_name
from tests.helpers.fake_backends import LAUNCH, ReplayBackend, launch_line
from tests.helpers.local_backend import CONFLICT, WRITE


class Cl2ReportBackend(ReplayBackend):
    """The log names this launch; the CL2 report dir holds summaries dated `written`."""

    def __init__(self, written: float) -> None:
        super().__init__(lines=launch_line(LAUNCH) + (CONFLICT + "\n") * 5 + WRITE + "\n")
        self.written = datetime.fromtimestamp(written, UTC)

    def collect(self, candidate: Candidate) -> list[Path]:
        logs = super().collect(candidate)
        report = candidate.log_dir / "cl2"
        report.mkdir(parents=True, exist_ok=True)
        docs = cl2_summaries(patch_node_status_p99_ms=45.0, pod_startup_p99_ms=2800.0,
                             throughput=77.0)  # fmt: skip
        for summary, doc in docs.items():
            (report / summary_name(summary, when=self.written)).write_text(json.dumps(doc))
        return logs


@pytest.mark.parametrize(("offset", "ok"), [(-1800.0, False), (-60.0, False), (-5.0, True),
                                            (120.0, True)])  # fmt: skip
def test_a_cl2_summary_written_before_the_launch_is_stale(offset: float, ok: bool,
                                                          tmp_path: Path) -> None:  # fmt: skip
    metric = "scheduling_throughput"
    backend = Cl2ReportBackend(time.time() + offset)
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval", 0, LAUNCH)
    m = evaluate_candidate(
        backend, candidate, EvaluationSettings(metric, scorer=MetricRegistry().scorer(metric))
    )
    assert (m.value is not None) is ok, m.reason
    if not ok:
        assert m.reason is not None and m.reason.startswith("stale metrics"), m.reason
        assert "CL2 summary written" in m.reason


def test_the_summary_time_is_read_from_its_name_as_cl2_writes_it() -> None:
    assert (
        summary_time("SchedulingThroughput_load_2026-08-07T16:16:53Z.json")
        == datetime(2026, 8, 7, 16, 16, 53, tzinfo=UTC).timestamp()
    )
    offset = "APIResponsivenessPrometheus_load_2026-08-07T18:16:53+02:00.json"
    assert summary_time(offset) == datetime(2026, 8, 7, 16, 16, 53, tzinfo=UTC).timestamp()
    assert summary_time("SchedulingThroughput_load.json") is None
