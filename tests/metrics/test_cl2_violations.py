"""ClusterLoader2 failing its own SLO checks measured a violation; failing otherwise, it
did not measure (issue 30, item 12).

From kubernetes/perf-tests clusterloader2: cmd/clusterloader.go ends each test with
printTestResult (a dash line, "Test Finished", "  Test:", "  Status: Fail", "  Errors: " +
the test's ErrorList, a dash line, all through klog.Errorf when there are errors) and then
`klog.Exitf("%d tests have failed!")`, exit 1, whatever failed. pkg/errors/error_list.go
joins the errors with "\\n" inside "[...]"; pkg/measurement/execute.go wraps each as
"measurement call <Method> - <Identifier> error: <err>"; a violation is a
MetricViolationError, "<metric>: <reason>" (pkg/errors/metric_violation_error.go), e.g.
"top latency metric: there should be no high-latency requests, but: [...]" from
APIResponsivenessPrometheus (pkg/measurement/common/slos/api_responsiveness_prometheus.go),
whose summary was written before the error was returned (the executor writes every
summary after the steps, errors or not: pkg/test/simple_test_executor.go).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.local import LocalBackend
from bisector.config import Section
from bisector.errors import CollectError
from bisector.metric_registry import MetricRegistry
from bisector.metrics.cl2 import VIOLATIONS_FILE, slo_violations
from bisector.metrics.readings import Evidence, read_metric
from tests.helpers.evidence import cl2_summaries, summary_name

DASH = "-" * 80
HEAD = "E1204 17:20:01.123456   12345 clusterloader.go:{line}] "
LATENCY = (
    "measurement call APIResponsivenessPrometheus - APIResponsivenessPrometheusSimple error: "
    "top latency metric: there should be no high-latency requests, but: "
    "[got: &{Resource:nodes Subresource:status Verb:PATCH Scope:resource Latency:perc50: "
    "12ms, perc90: 900ms, perc99: 1.6s Count:9734 SlowCount:812}; expected perc99 <= 1s]"
)
STARTUP = (
    "measurement call PodStartupLatency - PodStartupLatency error: pod startup: "
    "too high latency 99th percentile: got 7.2s expected: 5s"
)
CREATION = (
    "namespace test-abc-1 object deployment-0 creation error: the server was unable to "
    "return a response in the time allotted"
)


def _result(*errors: str) -> str:
    """CL2's printTestResult for a failed test, as klog writes it."""
    lines = [DASH, "Test Finished", "  Test: testing/load/config.yaml", "  Status: Fail",
             "  Errors: [" + "\n".join(errors) + "]", DASH]  # fmt: skip
    out = [HEAD.format(line=300 + i) + text for i, text in enumerate(lines)]
    return "\n".join(out) + "\n" + HEAD.format(line=390) + "1 tests have failed!\n"


def test_a_run_whose_only_errors_are_slo_violations_measured_them() -> None:
    assert slo_violations(_result(LATENCY)) == [LATENCY]
    assert slo_violations(_result(LATENCY, STARTUP)) == [LATENCY, STARTUP]


@pytest.mark.parametrize(
    "output",
    [
        _result(LATENCY, CREATION),  # a violation, and objects that were never created
        _result(CREATION),
        HEAD.format(line=260) + "Cluster verification error: no schedulable nodes in the cluster",
        "",
    ],
    ids=["violation-and-creation-error", "creation-error", "setup-failed", "no-output"],
)
def test_a_run_that_failed_otherwise_did_not_measure(output: str) -> None:
    assert slo_violations(output) is None


def _backend(tmp_path: Path, output: str, code: int) -> LocalBackend:
    """A workload that prints `output`, writes CL2's three summaries, exits `code`."""
    docs = cl2_summaries(patch_node_status_p99_ms=1600.0, pod_startup_p99_ms=7200.0,
                         throughput=40.0)  # fmt: skip
    writes = "; ".join(
        f'printf %s {shlex.quote(json.dumps(doc))} > "$BISECTOR_REPORT_DIR"/{summary_name(name)}'
        for name, doc in docs.items()
    )
    script = f"{writes}; printf %s {shlex.quote(output)} >&2; exit {code}"
    section = Section({"timeout": "1m", "launch": "true", "collect": "true", "workload": script})
    return LocalBackend(BackendContext(section, tmp_path))


def test_a_bad_commit_breaking_an_slo_is_measured_not_skipped(tmp_path: Path) -> None:
    """CL2 exits 1 on the violation: the warmup ends, the summary is read as the value
    (1.6 s p99 of PATCH node status), and what CL2 said is kept beside it."""
    backend = _backend(tmp_path, _result(LATENCY), 1)
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    backend.warmup(candidate)  # no CollectError: the workload ran and measured
    report = candidate.log_dir / "cl2"
    assert (report / VIOLATIONS_FILE).read_text() == LATENCY + "\n"
    metric = MetricRegistry().sources["apiserver_patch_node_status_p99_ms"]
    assert read_metric(metric, Evidence(cl2_dir=report)).value == 1600.0


@pytest.mark.parametrize(
    ("output", "code"),
    [(_result(LATENCY, CREATION), 1), (_result(LATENCY), 2), ("kubeconfig not found", 1)],
    ids=["violation-and-creation-error", "another-exit-code", "no-test-result"],
)
def test_a_workload_that_failed_otherwise_is_a_skip(tmp_path: Path, output: str, code: int) -> None:
    backend = _backend(tmp_path, output, code)
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval")
    with pytest.raises(CollectError, match="workload failed"):
        backend.warmup(candidate)
