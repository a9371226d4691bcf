"""The bisection's report: typed data (model.py) and what renders it.

model.Report                the typed report; report.json is Report.to_json()
write_reports(report, dir)  report.json, report.md, report.html
report_of(dir)              the Report a run directory's report.json holds, if readable
summary_lines(report)       the end-of-run evidence printed by run, demo and nightly

The package loads no module of its own: a backend names `adaptation.Adaptation`
without loading the report's model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bisector.report.model import Report

__all__ = ["report_of", "summary_lines", "write_reports"]


def write_reports(report: Report, run_dir: Path) -> None:
    from bisector.report.render import render_both

    report.write_json(run_dir)
    markdown, html = render_both(report)
    (run_dir / "report.md").write_text(markdown, encoding="utf-8")
    (run_dir / "report.html").write_text(html, encoding="utf-8")


def report_of(run_dir: Path) -> Report | None:
    """The report `run_dir/report.json` holds; None when there is none, or it cannot be read."""
    from bisector.report.model import Report

    try:
        return Report.read(run_dir / "report.json")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def summary_lines(report: Report) -> list[str]:
    from bisector.report.summary import summary_lines as lines

    return lines(report)
