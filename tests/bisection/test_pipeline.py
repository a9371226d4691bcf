"""run_bisection end to end on real temporary repositories through the local backend."""

from __future__ import annotations

import io
import json
import math
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.errors import BisectorError
from bisector.report.model import Report
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.checkout import snapshot
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import LocalDriver, write_local_config
from tests.helpers.repo import PR, BuiltRepo, build_repo
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _run(
    built: BuiltRepo,
    driver: LocalDriver,
    *,
    good: str | None = None,
    bad: str | None = None,
    run_dir: Path | None = None,
    **overrides: Any,
) -> Report:
    settings = settings_for(
        driver.config,
        good=good or built.mainline[0],
        bad=bad or built.mainline[-1],
        repo=built.path,
        run_dir=run_dir,
        **overrides,
    )
    return run_bisection(settings, progress=PlainProgress(io.StringIO()))


def _step(n: int, at: int) -> list[int]:
    return [GOOD] * at + [BAD] * (n - at)


def test_culprit_found_with_calibrated_threshold_and_reports(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(20, 13))
    driver = write_local_config(tmp_path)
    report = _run(built, driver)
    assert report.culprit is not None
    assert report.culprit.commit == built.mainline[13]
    assert report.culprit.confirmed is True
    assert report.culprit.parent.commit == built.mainline[12]
    data = json.loads((Path(report.run_dir) / "report.json").read_text())
    assert data["threshold"]["value"] == pytest.approx(math.sqrt(GOOD * BAD))
    assert "geometric mean" in data["threshold"]["how"]
    assert data["good"]["value"] == GOOD and data["bad"]["value"] == BAD
    first = data["evaluations"][0]
    assert {"commit", "verdict", "metrics", "duration_s", "reason"} <= set(first)
    assert [e["phase"] for e in data["evaluations"][:2]] == ["endpoint", "endpoint"]
    html = (Path(report.run_dir) / "report.html").read_text()
    assert "<svg" in html and built.mainline[13][:12] in html
    assert "Culprit" in (Path(report.run_dir) / "report.md").read_text()
    assert set(driver.calls("teardowns")) == set(driver.calls("launches"))


def test_merge_is_descended_to_the_exact_commit(tmp_path: Path) -> None:
    # Like kubernetes #46588: the PR's first commit is innocent, its second is the culprit.
    values = [GOOD] * 6 + [BAD] * 4
    prs = [
        PR(at=2, values=[GOOD, GOOD], number=11),
        PR(at=6, values=[GOOD, BAD, BAD], number=46588),
    ]
    built = build_repo(tmp_path / "repo", values, prs=prs)
    report = _run(built, write_local_config(tmp_path), first_parent=True)
    assert report.culprit is not None
    assert report.culprit.commit == built.pr_commits[46588][1]
    assert report.culprit.pr == 46588
    assert (report.culprit.merge and report.culprit.merge.commit) == built.mainline[6]


def test_a_fifth_of_commits_failing_to_build_are_skipped(tmp_path: Path) -> None:
    n, culprit = 40, 23
    broken = set(random.Random(7).sample([i for i in range(1, n - 1) if i != culprit], 8))
    built = build_repo(tmp_path / "repo", _step(n, culprit), broken=broken)
    driver = write_local_config(tmp_path)
    report = _run(built, driver)
    assert report.culprit is not None
    assert report.culprit.commit == built.mainline[culprit]
    skipped = [e for e in report.evaluations if e.verdict == "skip"]
    assert all((e.reason or "").startswith("build:") for e in skipped)
    assert {e.commit for e in skipped} <= {built.mainline[i] for i in broken}
    assert not set(driver.calls("launches")) & {built.mainline[i] for i in broken}


def test_only_broken_commits_left_is_inconclusive_and_names_them(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(6, 3), broken={2, 3})
    report = _run(built, write_local_config(tmp_path))
    assert report.culprit is None
    assert report.status == "inconclusive"
    assert built.mainline[3] in report.candidates


def test_flaky_launches_are_retried(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(10, 4))
    driver = write_local_config(tmp_path)
    driver.switch("flaky")
    report = _run(built, driver)
    assert report.culprit is not None and report.culprit.commit == built.mainline[4]
    first_runs = [e for e in report.evaluations if e.phase != "confirm"]
    assert first_runs and all(e.launch_attempts == 2 for e in first_runs)
    assert all(e.verdict != "skip" for e in report.evaluations)


def test_launch_failing_after_all_attempts_is_skip_not_good(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(6, 3))
    driver = write_local_config(tmp_path, run={"launch_attempts": 1})
    driver.switch("flaky")
    with pytest.raises(BisectorError, match="could not be measured"):
        _run(built, driver)


def test_logs_without_data_stop_at_the_endpoints(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(6, 3))
    driver = write_local_config(tmp_path)
    driver.switch("nodata")
    with pytest.raises(BisectorError, match="no data"):
        _run(built, driver)


def test_endpoints_that_do_not_separate_show_both_numbers(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [GOOD] * 5)
    with pytest.raises(BisectorError, match=r"good 2, bad 2"):
        _run(built, write_local_config(tmp_path))
    built2 = build_repo(tmp_path / "repo2", _step(5, 2))
    with pytest.raises(BisectorError, match=r"scored 2 \(good\), bad .* scored 40 \(good\)"):
        _run(built2, write_local_config(tmp_path / "c2"), threshold=100.0)


def test_user_checkout_and_user_bisect_untouched(tmp_path: Path) -> None:
    import subprocess

    built = build_repo(tmp_path / "repo", _step(12, 7))
    path = built.path
    subprocess.run(
        ["git", "bisect", "start", built.mainline[-1], built.mainline[0]],
        cwd=path,
        check=True,
        capture_output=True,
    )
    (path / "value").write_text("edited by the user\n")  # uncommitted work
    (path / "notes.txt").write_text("untracked\n")
    before = snapshot(path)
    report = _run(built, write_local_config(tmp_path))
    assert report.culprit is not None
    assert snapshot(path) == before


@pytest.mark.slow
def test_overlapping_range_reuses_verdicts(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 10))
    driver = write_local_config(tmp_path)
    first = _run(built, driver)
    collected = len(driver.calls("collected"))
    second = _run(built, driver, good=built.mainline[4], bad=built.mainline[14])
    assert second.culprit is not None and first.culprit is not None
    assert second.culprit.commit == first.culprit.commit == built.mainline[10]
    reused = [e for e in second.evaluations if e.cached]
    assert reused
    fresh = len(driver.calls("collected")) - collected
    assert fresh == len(second.evaluations) - len(reused)


def test_repeats_take_a_majority(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(8, 5))
    report = _run(built, write_local_config(tmp_path), repeats=3)
    assert report.culprit is not None and report.culprit.commit == built.mainline[5]
    endpoint_runs = [e for e in report.evaluations if e.phase == "endpoint"]
    assert len(endpoint_runs) == 6
    bisect_runs = [e for e in report.evaluations if e.phase == "bisect"]
    assert len(bisect_runs) == 2 * len({e.commit for e in bisect_runs})  # 2 agree: stop


@pytest.mark.slow
def test_1024_linear_commits_within_the_log2_bound(tmp_path: Path) -> None:
    n = 1024
    built = build_repo(tmp_path / "repo", _step(n + 1, 611))
    report = _run(built, write_local_config(tmp_path))
    assert report.culprit is not None and report.culprit.commit == built.mainline[611]
    assert report.range_size == n
    assert len(report.evaluations) <= math.ceil(math.log2(n)) + 2 + 2


def test_pathspec_limits_the_candidates(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(30, 17))
    report = _run(built, write_local_config(tmp_path), paths=["value"])
    assert report.culprit is not None and report.culprit.commit == built.mainline[17]
    assert report.range_size == 1  # only the commit that changed `value`
    phases = [e.phase for e in report.evaluations]
    assert phases.count("bisect") == 1  # that one commit; the other 28 are never built


def _run_in_process(built: BuiltRepo, backend: FileValueBackend, **overrides: Any) -> Report:
    settings = settings_for(
        write_local_config(built.path.parent / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        **overrides,
    )
    return run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))


def test_confirmation_that_disagrees_is_reported_unconfirmed(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 9))
    culprit = built.mainline[9]

    def flips_on_second_run(commit: str, nth: int, value: int) -> int | None:
        return GOOD if commit == culprit and nth == 2 else value

    backend = FileValueBackend(flips_on_second_run)
    report = _run_in_process(built, backend)
    assert report.culprit is not None and report.culprit.commit == culprit
    assert report.culprit.confirmed is False
    assert report.culprit.confirmation[culprit] == "good"
    assert ("close", "") in backend.steps


def test_no_data_mid_range_is_skip_with_reason(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(16, 9))
    silent = built.mainline[8]
    backend = FileValueBackend(lambda c, _n, v: None if c == silent else v)
    report = _run_in_process(built, backend)
    assert report.verdicts.get(silent) in (None, "skip")
    skipped = [e for e in report.evaluations if e.commit == silent]
    assert all(e.verdict == "skip" and "no data" in (e.reason or "") for e in skipped)
    assert skipped  # git's first midpoint of 1..15 is 8
    # the culprit's parent cannot be measured, so git cannot tell 8 from 9: both are named
    assert report.culprit is None
    assert set(report.candidates) == {silent, built.mainline[9]}


def test_an_endpoint_error_loses_nothing(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(8, 3))
    driver = write_local_config(tmp_path)
    with pytest.raises(BisectorError, match="do not separate"):
        _run(built, driver, threshold=100.0)
    endpoints_measured = len(driver.calls("collected"))
    assert endpoints_measured == 2
    report = _run(built, driver, threshold=10.0)  # another question, same measurements
    assert report.culprit is not None and report.culprit.commit == built.mainline[3]
    assert sum(e.cached for e in report.evaluations) == 2
    assert len(driver.calls("collected")) == endpoints_measured + len(report.evaluations) - 2


def test_a_failing_backend_close_still_removes_the_tools_worktrees(tmp_path: Path) -> None:
    class CloseFails(FileValueBackend):
        def close(self) -> None:
            raise RuntimeError("kube-down.sh crashed")

    built = build_repo(tmp_path / "repo", _step(6, 2))
    settings = settings_for(
        write_local_config(tmp_path).config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        run_dir=tmp_path / "run",
    )
    with pytest.raises(RuntimeError, match="kube-down"):
        run_bisection(settings, backend=CloseFails(), progress=PlainProgress(io.StringIO()))
    assert not list((tmp_path / "run" / "worktrees").glob("*"))
    worktrees = subprocess.run(
        ["git", "worktree", "list"], cwd=built.path, capture_output=True, text=True, check=True
    )
    assert worktrees.stdout.count("\n") == 1  # only the user's own checkout is left
