"""report.md and report.html from one Report (the smoking gun's logs are read once for both)."""

from __future__ import annotations

from bisector.report.html import render_html as _html
from bisector.report.markdown import render_markdown as _markdown
from bisector.report.model import Report
from bisector.report.smoking_gun import SmokingGun, smoking_gun

__all__ = ["render_both", "render_html", "render_markdown"]


def render_both(report: Report) -> tuple[str, str]:
    """(report.md, report.html); reads the culprit's and its parent's logs once."""
    gun = smoking_gun(report)
    return _markdown(report, gun), _html(report, gun)


def render_markdown(report: Report, gun: SmokingGun | None = None) -> str:
    return _markdown(report, gun if gun is not None else smoking_gun(report))


def render_html(report: Report, gun: SmokingGun | None = None) -> str:
    return _html(report, gun if gun is not None else smoking_gun(report))
