"""Noise-aware and parallel search through run_bisection, in-process on real git repos."""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.errors import BisectorError
from bisector.report.model import Report
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend, Tamper
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import PR, BuiltRepo, build_repo
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _step(n: int, at: int) -> list[int]:
    return [GOOD] * at + [BAD] * (n - at)


def _run(
    built: BuiltRepo,
    backend: FileValueBackend,
    *,
    write: bool = False,
    fold: bool = True,
    **overrides: Any,
) -> Report:
    settings = settings_for(
        write_local_config(built.path.parent / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        measure_ahead=fold,
        **{"threshold": 10.0, **overrides},
    )
    return run_bisection(
        settings, backend=backend, progress=PlainProgress(io.StringIO()), write_report=write
    )


def _flips(p: float, seed: int, only: set[str] | None = None) -> Tamper:
    rng = random.Random(seed)

    def tamper(commit: str, _nth: int, value: int) -> int | None:
        if (only is None or commit in only) and rng.random() < p:
            return BAD if value == GOOD else GOOD
        return value

    return tamper


def _git_agrees(report: Report, order: list[str], culprit: str) -> None:
    """Every verdict git was told is consistent with the culprit."""
    at = order.index(culprit)
    for commit, verdict in report.verdicts.items():
        if verdict == "bad":
            assert order.index(commit) >= at
        elif verdict == "good":
            assert order.index(commit) < at


@pytest.mark.parametrize("seed", [1, 2])
def test_verdict_noise_finds_the_culprit_with_stated_confidence(tmp_path: Path, seed: int) -> None:
    built = build_repo(tmp_path / "repo", _step(32, 19))
    report = _run(built, FileValueBackend(_flips(0.15, seed)), error_rate=0.15)
    culprit = built.mainline[19]
    assert report.culprit is not None and report.culprit.commit == culprit
    assert (report.culprit.confidence or 0) >= 0.99
    assert report.search.mode == "posterior"
    _git_agrees(report, built.mainline, culprit)
    assert f"[{culprit}] is the first bad commit" in report.bisect_log or (
        report.verdicts.get(culprit) == "bad"
    )


def test_a_flipped_good_endpoint_run_is_outweighed_not_fatal(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(20, 12))
    good = built.mainline[0]

    def first_good_run_looks_bad(commit: str, nth: int, value: int) -> int | None:
        return BAD if commit == good and nth == 1 else value

    report = _run(built, FileValueBackend(first_good_run_looks_bad), error_rate=0.1)
    assert report.culprit is not None and report.culprit.commit == built.mainline[12]
    assert (report.culprit.confidence or 0) >= 0.99
    # without a noise model the same run stops: the endpoints do not separate
    with pytest.raises(BisectorError, match="do not separate"):
        _run(built, FileValueBackend(first_good_run_looks_bad), error_rate=0.0, seed=1)


def test_skipped_parent_makes_a_candidate_range(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(24, 15), broken={14})
    report = _run(built, FileValueBackend(_flips(0.1, 5)), error_rate=0.1, write=True)
    assert report.culprit is None
    assert report.candidates == [built.mainline[14], built.mainline[15]]
    assert (report.search.confidence or 0) >= 0.99
    assert report.verdicts[built.mainline[14]] == "skip"
    md = (Path(report.run_dir) / "report.md").read_text()
    assert f"before it, which could not be measured:\n\n- {built.mainline[14][:12]} " in md


def test_budget_exhausted_is_unsure_and_names_a_range(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(64, 40))
    report = _run(
        built, FileValueBackend(_flips(0.2, 4)), error_rate=0.2, max_evaluations=8, write=True
    )
    assert report.status == "unsure" and report.culprit is None
    likely = report.search.likely_range
    assert likely is not None and likely.probability >= 0.95
    assert 1 < len(likely.commits) < 63
    assert sum(e.phase != "confirm" for e in report.evaluations) == 8
    md = (Path(report.run_dir) / "report.md").read_text()
    assert md.startswith("# bisector report\n\n**Unsure**: ")
    assert f"one of the {len(likely.commits) - 1} commits before it" in md


def test_resume_rebuilds_the_posterior_from_the_journal(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _step(40, 23))
    flips = _flips(0.1, 9)
    calls = {"n": 0}

    def dies_at_the_tenth_run(commit: str, nth: int, value: int) -> int | None:
        calls["n"] += 1
        if calls["n"] == 10:
            raise KeyboardInterrupt
        return flips(commit, nth, value)

    first = FileValueBackend(dies_at_the_tenth_run)
    with pytest.raises(KeyboardInterrupt):
        _run(built, first, error_rate=0.1)
    second = FileValueBackend(_flips(0.1, 10))
    report = _run(built, second, error_rate=0.1)
    assert report.culprit is not None and report.culprit.commit == built.mainline[23]
    run_dir = Path(report.run_dir)
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    measured = [r for r in records if r["type"] == "measurement"]
    assert len(measured) == 9 + sum(second.runs.values())  # nothing measured twice
    assert sum(e.phase != "confirm" for e in report.evaluations) == len(measured) - 2


def test_noisy_merge_is_descended(tmp_path: Path) -> None:
    values = [GOOD] * 10 + [BAD] * 6
    prs = [PR(at=4, values=[GOOD, GOOD]), PR(at=10, values=[GOOD, GOOD, BAD, BAD], number=46588)]
    built = build_repo(tmp_path / "repo", values, prs=prs)
    report = _run(built, FileValueBackend(_flips(0.1, 2)), error_rate=0.1, first_parent=True)
    assert report.culprit is not None
    assert report.culprit.commit == built.pr_commits[46588][2]
    assert (report.culprit.merge and report.culprit.merge.commit) == built.mainline[10]
    assert (report.culprit.confidence or 0) >= 0.98


def test_metric_likelihood_with_overlapping_lognormal_noise(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1000] * 21 + [1600] * 11)
    rng = random.Random(3)
    backend = FileValueBackend(lambda _c, _n, v: round(v * rng.lognormvariate(0, 0.2)))
    report = _run(built, backend, likelihood="metric", threshold=None)
    assert report.culprit is not None and report.culprit.commit == built.mainline[21]
    assert (report.culprit.confidence or 0) >= 0.99
    # overlapping sides: more than the first 3 runs per endpoint, at most 12
    assert 6 < sum(e.phase == "endpoint" for e in report.evaluations) <= 24


def test_metric_likelihood_without_noise_costs_what_git_bisect_does(tmp_path: Path) -> None:
    n = 129
    built = build_repo(tmp_path / "repo", _step(n, 77))
    report = _run(built, FileValueBackend(), likelihood="metric", threshold=None)
    assert report.culprit is not None and report.culprit.commit == built.mainline[77]
    search = sum(e.phase == "bisect" for e in report.evaluations)
    assert search <= math.ceil(math.log2(n - 1))
    assert sum(e.phase == "endpoint" for e in report.evaluations) == 6  # separated: 3 each


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_four_slots_take_fewer_rounds(tmp_path: Path, noise: float) -> None:
    built = build_repo(tmp_path / "repo", _step(64, 41))
    backend = FileValueBackend(_flips(noise, 1))
    # Without measuring ahead (tests/bisection/test_pipeline_fold_rounds.py): every phase
    # its rounds.
    report = _run(built, backend, error_rate=noise, parallel=4, fold=False)
    assert report.culprit is not None and report.culprit.commit == built.mainline[41]
    rounds = report.search.rounds
    assert rounds["endpoint"] == 1
    # One confirmation round, unless a confirmation run flipped: then it is measured
    # again (a majority of 3) instead of leaving the culprit unconfirmed.
    assert rounds["confirm"] == 1 or (noise and rounds["confirm"] <= 3)
    assert report.culprit.confirmed
    bisect = [e for e in report.evaluations if e.phase == "bisect"]
    assert rounds["bisect"] < len(bisect)
    if noise == 0:
        assert rounds["bisect"] <= 3  # ceil(log5 63) = 3
