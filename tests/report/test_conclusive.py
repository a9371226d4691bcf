"""What a run without one culprit established, and how every form of the report leads with it."""

from __future__ import annotations

import io
import random
from pathlib import Path

from bisector.bisection.pipeline import run_bisection
from bisector.report.conclusive import established, next_steps
from bisector.report.model import Between, Bound, Report
from bisector.report.render import render_markdown
from bisector.report.summary import summary_lines
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend, Tamper
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.sample_report import MAINLINE, inconclusive_report, sample_report
from tests.helpers.settings import settings_for


def _inconclusive(tmp_path: Path) -> Report:
    return inconclusive_report(tmp_path)


def test_the_bounds_and_why_each_commit_between_has_no_verdict(tmp_path: Path) -> None:
    report = _inconclusive(tmp_path)
    m0, m1, m2, m3 = MAINLINE[:4]
    found = established(report)
    assert found is not None
    assert found.last_good == Bound(m0, "good subject", "good", 11.0, [10.0, 12.0], "endpoint")
    assert found.first_bad == Bound(m3, f"subject of {m3[:6]}", "bad", 2000.0, [2000.0], "measured")
    assert found.between == [
        Between(m1, "", [], "marked skip by hand: known broken: does not boot"),
        Between(
            m2,
            f"subject of {m2[:6]}",
            [],
            "build failed for m2m2m2: `make quick-release KUBE_FASTBUILD=true` exited with code 2",
        ),
    ]
    assert found.unmeasured == [m1, m2] and found.probability is None

    report.conclusive = found
    lines = summary_lines(report)
    assert lines[0] == (
        f"not one culprit: the regression came in after {m0[:12]} (the good endpoint, "
        f"conflicts 11, 2 runs) and at or before {m3[:12]} (bad, conflicts 2,000, measured): "
        f"{m3[:12]} or one of the 2 commits before it, which could not be measured:"
    )
    assert lines[1] == f"  {m1[:12]}: marked skip by hand: known broken: does not boot"
    steps = next_steps(report)
    assert steps[0] == (
        f"read the changes it could be: `git log --first-parent --oneline {m0[:12]}..{m3[:12]}`"
    )
    # A commit skipped by hand is one a person can measure too.
    assert steps[1].startswith(f"{m1[:12]}, {m2[:12]} cannot be measured here: measure {m2[:12]}")
    assert render_markdown(report).startswith(
        f"# bisector report\n\n**Not one culprit**: the regression came in after {m0[:12]} "
    )


def test_with_a_culprit_nothing_is_said_of_bounds(tmp_path: Path) -> None:
    assert established(sample_report(tmp_path)) is None


def _flips(p: float, seed: int) -> Tamper:
    rng = random.Random(seed)

    def tamper(commit: str, _nth: int, value: int) -> int | None:
        return (40 if value == 2 else 2) if rng.random() < p else value

    return tamper


def test_an_unsure_run_leads_with_the_posteriors_bracket(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [2] * 40 + [40] * 24)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
        error_rate=0.2,
        max_evaluations=8,
    )
    report = run_bisection(
        settings, backend=FileValueBackend(_flips(0.2, 4)), progress=PlainProgress(io.StringIO())
    )
    assert report.status == "unsure"
    likely = report.search.likely_range
    found = report.conclusive
    assert likely is not None and found is not None
    # With the posterior's probability, after the commit before its likely range and at or
    # before the range's last commit; the rest of the range between.
    assert found.probability == likely.probability
    before = built.mainline[built.mainline.index(likely.commits[0]) - 1]
    assert found.last_good.commit == before
    assert found.first_bad.commit == likely.commits[-1]
    assert [b.commit for b in found.between] == likely.commits[:-1]

    lines = summary_lines(report)
    assert lines[0].startswith(
        "unsure: the evaluation budget ran out before the search was sure (best guess "
    )
    assert f"; with probability {likely.probability:.3f} the regression came in after" in lines[0]
    assert lines[0].endswith(
        f"one of the {len(likely.commits) - 1} commits before it, which the runs so far do "
        "not decide:"
    )
    # A stretch no run was made of is one line, not a line a commit.
    assert any(line.endswith(" commits, not measured") for line in lines[1:])
    assert lines.index("evidence:") <= 1 + 10 + 1 + len(next_steps(report))
    assert next_steps(report)[-1].startswith(
        "search longer: the same command with --fresh and --max-evaluations above the 8 "
    )
