"""Predicted vs actual at the end of every run (issue 29.2): the ETA said when the search
began, after the endpoints, against the wall time the run took, in report.json, the
end-of-run summary, report.md and report.html."""

from __future__ import annotations

import io
import json
from pathlib import Path

from bisector.bisection.pipeline import run_bisection
from bisector.report.costs import eta_text
from bisector.report.model import EtaCheck, Report
from bisector.report.summary import summary_lines
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import whole_range
from tests.helpers.repo import build_repo


def test_the_wording_of_predicted_and_actual() -> None:
    eta = EtaCheck(predicted_s=6660.0, predicted_at_s=900.0, actual_s=3093.0)
    assert eta_text(eta) == (
        "time: predicted 1h51m when the search began (15m00s in, ETA 1h36m); "
        "the run took 51m33s (0.46x the prediction)"
    )
    none = EtaCheck(predicted_s=None, predicted_at_s=None, actual_s=12.0)
    assert eta_text(none).startswith("time: no ETA was said when the search began")


def test_a_run_reports_its_prediction_and_its_wall_time(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 5 + [9] * 4)
    settings = whole_range(tmp_path, built, threshold=5.0)
    out = io.StringIO()
    report = run_bisection(settings, backend=FileValueBackend(), progress=PlainProgress(out))
    eta = report.eta
    assert eta is not None
    # No model for this backend: the endpoints' measured phases made the prediction.
    assert eta.predicted_s is not None and eta.predicted_at_s is not None
    assert 0 < eta.predicted_at_s < eta.predicted_s
    assert eta.predicted_at_s <= eta.actual_s
    assert "ETA" in out.getvalue()  # the progress line said it from measurements too
    said = eta_text(eta)
    assert said in summary_lines(report)
    run_dir = Path(report.run_dir)
    data = json.loads((run_dir / "report.json").read_text())
    assert data["eta"]["actual_s"] == eta.actual_s
    assert Report.read(run_dir / "report.json").eta == eta
    assert said in (run_dir / "report.md").read_text()
    assert said in (run_dir / "report.html").read_text()


def test_a_report_from_before_the_field_reads_without_it(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1, 1, 9])
    settings = whole_range(tmp_path, built, threshold=5.0)
    report = run_bisection(
        settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO())
    )
    data = report.to_json()
    del data["eta"]
    old = Report.from_json(data)
    assert old.eta is None
    assert not [line for line in summary_lines(old) if line.startswith("time:")]
