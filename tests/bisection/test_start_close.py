"""bisector/bisection/start.py: the backend's close is a teardown too. An executor's
close deletes the run's Jobs and a backend's may take down a base cluster; when it
failed, the run said TEARDOWN FAILED and still exited 0 (the failure was suppressed)."""

from __future__ import annotations

from pathlib import Path

from bisector.commands.run import outcome_code
from bisector.errors import InfraError
from bisector.exitcodes import RunExit
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import bisect_built
from tests.helpers.repo import build_repo


class _CloseFails(FileValueBackend):
    def close(self) -> None:
        raise InfraError("TEARDOWN FAILED: the run's Jobs are not all gone (job-1)")


def test_a_failed_close_is_a_teardown_failure_of_the_run(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [2, 2, 2, 40, 40, 40])
    report, _ = bisect_built(tmp_path, built, _CloseFails(), run_dir=tmp_path / "run")
    assert report.culprit is not None and report.culprit.commit == built.mainline[3]
    (failure,) = report.teardown_failures
    assert "job-1" in failure.error and failure.eval_dir == str(tmp_path / "run")
    assert outcome_code(report) == RunExit.LEFT_UP
    assert "job-1" in (tmp_path / "run" / "report.md").read_text()
