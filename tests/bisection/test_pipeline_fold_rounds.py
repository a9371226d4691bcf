"""Idle slots measure ahead: search points beside the endpoints, confirmation beside the
last search runs (`SearchSettings.measure_ahead`), through run_bisection on real git repos."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.errors import BisectorError
from bisector.report.model import Report
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import BuiltRepo, build_repo
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _run(
    built: BuiltRepo,
    backend: FileValueBackend,
    *,
    fold: bool,
    run_dir: Path | None = None,
    **overrides: Any,
) -> Report:
    settings = settings_for(
        write_local_config(built.path.parent / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        run_dir=run_dir,
        measure_ahead=fold,
        **{"threshold": 10.0, "parallel": 4, **overrides},
    )
    return run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))


def _journal(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("error_rate", [0.0, 0.1])
def test_idle_endpoint_slots_measure_the_first_search_points(
    tmp_path: Path, error_rate: float
) -> None:
    built = build_repo(tmp_path / "repo", [GOOD] * 41 + [BAD] * 23)
    backend = FileValueBackend()
    report = _run(built, backend, fold=True, error_rate=error_rate)
    assert report.culprit is not None and report.culprit.commit == built.mainline[41]
    assert report.culprit.confirmed is True
    rounds = report.search.rounds
    assert rounds["endpoint"] == 1
    first_round = [e.phase for e in report.evaluations[:4]]
    assert sorted(first_round) == ["bisect", "bisect", "endpoint", "endpoint"]
    ahead = [e.commit for e in report.evaluations[:4] if e.phase == "bisect"]
    for commit in ahead:  # kept: their verdicts came from the speculative run alone
        assert backend.runs[commit] == 1 or error_rate > 0
        assert commit in report.verdicts or error_rate > 0
    baseline = _run(
        build_repo(tmp_path / "base", [GOOD] * 41 + [BAD] * 23),
        FileValueBackend(),
        fold=False,
        error_rate=error_rate,
    )
    base_rounds = baseline.search.rounds
    assert base_rounds["endpoint"] == 1 and base_rounds["confirm"] == 1
    assert sum(rounds.values()) < sum(base_rounds.values())


def test_speculative_runs_are_not_verdicts_when_the_endpoints_do_not_separate(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", [BAD] * 30)  # the good endpoint is already bad
    with pytest.raises(BisectorError, match="do not separate"):
        _run(built, FileValueBackend(), fold=True, run_dir=tmp_path / "run")
    records = _journal(tmp_path / "run")
    phases = [r["measurement"]["phase"] for r in records if r["type"] == "measurement"]
    assert sorted(phases) == ["bisect", "bisect", "endpoint", "endpoint"]
    assert not [r for r in records if r["type"] in ("verdict", "threshold")]


@pytest.mark.slow
def test_confirmation_shares_the_last_search_round(tmp_path: Path) -> None:
    # Noiseless runs, searched as if 20 % could flip: the posterior passes 0.9 on the
    # culprit before it reaches 0.99, so the idle slots confirm it in that round.
    built = build_repo(tmp_path / "repo", [GOOD] * 41 + [BAD] * 23)
    report = _run(built, FileValueBackend(), fold=True, error_rate=0.2)
    assert report.culprit is not None and report.culprit.commit == built.mainline[41]
    assert report.culprit.confirmed is True
    assert report.culprit.parent.commit == built.mainline[40]
    rounds = report.search.rounds
    assert rounds.get("confirm", 0) == 0  # no round of its own
    confirms = [e.commit for e in report.evaluations if e.phase == "confirm"]
    assert sorted(confirms) == sorted(built.mainline[40:42])
    # The confirmation ran in a round with search runs: between two bisect begins or last.
    records = _journal(Path(report.run_dir))
    begun = [r for r in records if r["type"] in ("begin", "measurement")]
    last_bisect = max(
        i
        for i, r in enumerate(begun)
        if r["type"] == "measurement" and r["measurement"]["phase"] == "bisect"
    )
    first_confirm = min(
        i
        for i, r in enumerate(begun)
        if r["type"] == "measurement" and r["measurement"]["phase"] == "confirm"
    )
    round_begins = [i for i, r in enumerate(begun) if r["type"] == "begin" and i < first_confirm]
    assert round_begins[-4] < last_bisect  # the 4 slots began together, search included


@pytest.mark.slow
def test_resumed_run_repeats_no_folded_measurement(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [GOOD] * 41 + [BAD] * 23)
    first = _run(built, FileValueBackend(), fold=True, error_rate=0.1)
    again = FileValueBackend()
    second = _run(built, again, fold=True, error_rate=0.1)
    assert sum(again.runs.values()) == 0
    assert second.culprit == first.culprit


@pytest.mark.parametrize("error_rate", [0.0, 0.1])
def test_nothing_to_measure_ahead_in_a_one_commit_range(tmp_path: Path, error_rate: float) -> None:
    built = build_repo(tmp_path / "repo", [GOOD, BAD])
    report = _run(built, FileValueBackend(), fold=True, error_rate=error_rate)
    assert report.culprit is not None and report.culprit.commit == built.mainline[1]
    assert not [e for e in report.evaluations if e.phase == "bisect" and error_rate == 0]
