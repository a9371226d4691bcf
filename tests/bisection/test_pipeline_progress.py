"""What the progress line counts on a first-parent hunt (issue 22, point 5): the runs
still to come include the descent, the confirmation and the safety net (it said
`~0 steps left` while 2-3 confirmation runs remained), and a first-parent walk counts
first-parent commits (it said `119 commits left` during a walk over 39 merges). The
report's `git bisect log` shows both levels: the walk and the descent."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from bisector.bisection.pipeline import run_bisection
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import whole_range
from tests.helpers.repo import PR, build_repo

_LINE = re.compile(r"bisector: (\w+): evaluating \| (\w+) \| ~(\d+) runs? left")


def test_runs_left_count_the_confirmation_and_a_walk_counts_first_parent_commits(
    tmp_path: Path,
) -> None:
    values = [1] * 9 + [9] * 8
    prs = [PR(at=3, values=[1, 1, 1]), PR(at=9, values=[1, 1, 9, 9], number=9)]
    prs += [PR(at=k, values=[v, v]) for k, v in ((5, 1), (7, 1), (12, 9), (14, 9))]
    built = build_repo(tmp_path / "repo", values, prs=prs)
    settings = whole_range(tmp_path, built, threshold=5.0, first_parent=True)
    out = io.StringIO()
    report = run_bisection(settings, backend=FileValueBackend(), progress=PlainProgress(out))
    assert report.culprit is not None and report.culprit.commit == built.pr_commits[9][2]
    lines = [(m[1], int(m[3])) for m in _LINE.finditer(out.getvalue())]
    confirm = [left for phase, left in lines if phase == "confirm"]
    assert confirm == [2, 1], out.getvalue()  # the culprit, then its parent: never ~0
    search = [left for phase, left in lines if phase == "bisect"]
    assert all(left >= 3 for left in search), out.getvalue()  # search + 2 confirmation runs
    walk = [e for e in report.evaluations if e.phase == "bisect" and e.commit in built.mainline]
    first = walk[0].why
    assert first == f"git bisect midpoint, {len(built.mainline) - 1} first-parent commits left"
    log = report.bisect_log
    assert log.count("git bisect start") == 2, log  # the walk, then the descent
    walk_log, descent_log = log.split("\n\n")
    assert "'--first-parent'" in walk_log and "'--first-parent'" not in descent_log
    assert built.pr_commits[9][2] in descent_log.splitlines()[-1]  # git's first bad commit


def test_a_setup_that_takes_time_is_said_as_it_begins_and_ends(tmp_path: Path) -> None:
    """The procs backend builds its harness at setup (2m10s from a cold cache in the 2017
    hunt): the line said only "starting" meanwhile, and a plain log nothing at all."""

    class SlowSetup(FileValueBackend):
        def setup(self) -> None:
            time.sleep(1.2)  # what the run is told takes a while, not a timing asserted
            super().setup()

    built = build_repo(tmp_path / "repo", [1] * 3 + [9] * 3)
    settings = whole_range(tmp_path, built, threshold=5.0)
    out = io.StringIO()
    run_bisection(settings, backend=SlowSetup(), progress=PlainProgress(out))
    lines = out.getvalue().splitlines()
    begins = lines.index("bisector: setting up the local backend")
    ends = next(i for i, ln in enumerate(lines) if re.fullmatch(
        r"bisector: the local backend was set up in [0-9.]+s", ln))  # fmt: skip
    first_run = next(i for i, ln in enumerate(lines) if "evaluating" in ln)
    assert begins < ends < first_run, lines
