"""A whole bisection in this process: a `build_repo` history, a backend object, flags."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from bisector.backends.base import Backend
from bisector.bisection.pipeline import run_bisection
from bisector.report.model import Report
from bisector.settings import RunSettings
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import BuiltRepo
from tests.helpers.settings import settings_for


def whole_range(tmp_path: Path, built: BuiltRepo, **flags: Any) -> RunSettings:
    """Settings bisecting `built` from its first to its last mainline commit, with the
    local backend's config under tmp_path/cfg; `flags` as in `settings_for`."""
    return settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        **flags,
    )


def bisect_built(
    tmp_path: Path, built: BuiltRepo, backend: Backend, **flags: Any
) -> tuple[Report, str]:
    """Bisect `built` from its first to its last mainline commit with `backend`; the
    report and what the run said on screen. `flags` as in `settings_for`."""
    settings = whole_range(tmp_path, built, **flags)
    out = io.StringIO()
    report = run_bisection(settings, backend=backend, progress=PlainProgress(out))
    return report, out.getvalue()
