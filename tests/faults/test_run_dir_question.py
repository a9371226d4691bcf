"""One run directory answers one question (issue 20, class 4).

A run directory's journal holds the measurements of one question: a range, a metric,
a threshold, a backend and its config, a way to search. An explicit `--run-dir`
reused for another question would answer it with the old measurements (0 evaluations,
the old culprit "confirmed" for the new metric): it is refused with one line, or
started over with `--fresh` (the earlier run's journal and logs kept aside).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.bisection.question import QUESTION_PARTS, other_question
from bisector.exitcodes import RunExit
from bisector.measure.journal import Measured, Record, Start, ThresholdSet
from bisector.measure.measurement import Measurement
from tests.helpers.faults import FaultDriver, journal, measurements, run_args
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

VALUES = [2, 2, 2, 40, 40, 40]


def _go(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.fixture
def finished(tmp_path: Path, driver: FaultDriver) -> tuple[list[str], Path]:
    """A finished run of conflicts over mainline 0..5 in its own --run-dir: (argv, run dir)."""
    built = build_repo(tmp_path / "repo", VALUES)
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    first = _go(argv)
    assert first.returncode == RunExit.FOUND, first.stderr
    return argv, run_dir


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "said"),
    [
        (["--metric", "node_writes"], "metric 'conflicts', not 'node_writes'"),
        (["--threshold", "20"], "threshold None, not 20.0"),
        (["--repeats", "3"], "repeats 1, not 3"),
        (["--first-parent"], "first_parent False, not True"),
        (["--good", "@1"], "the range"),
        (["--config", "@edited"], "backend, backend config, warmup or seed"),
    ],
)
def test_a_run_dir_reused_for_another_question_is_refused_in_one_line(
    tmp_path: Path,
    driver: FaultDriver,
    finished: tuple[list[str], Path],
    change: list[str],
    said: str,
) -> None:
    argv, run_dir = finished
    before = (run_dir / "journal.jsonl").read_text()
    launches = driver.calls("launches")
    if change == ["--good", "@1"]:
        good = argv.index("--good") + 1
        repo = Path(argv[argv.index("--repo") + 1])
        second = subprocess.run(
            ["git", "rev-parse", "HEAD~4"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        again = [*argv[:good], second, *argv[good + 1 :]]
    elif change == ["--config", "@edited"]:
        edited = tmp_path / "edited.toml"
        edited.write_text(driver.config.read_text().replace('timeout = "60s"', 'timeout = "59s"'))
        at = argv.index("--config") + 1
        again = [*argv[:at], str(edited), *argv[at + 1 :]]
    else:
        again = [*argv, *change]
    result = _go(again)
    assert result.returncode == RunExit.USAGE, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"{run_dir} holds the run of another question" in lines[0]
    assert said in lines[0] and "--fresh" in lines[0]
    assert "Traceback" not in result.stderr
    assert (run_dir / "journal.jsonl").read_text() == before  # nothing written
    assert driver.calls("launches") == launches  # nothing launched


@pytest.mark.slow
def test_the_same_question_resumes_and_fresh_starts_over_keeping_the_old_run(
    tmp_path: Path, driver: FaultDriver, finished: tuple[list[str], Path]
) -> None:
    argv, run_dir = finished
    old = measurements(run_dir)
    same = _go(argv)
    assert same.returncode == RunExit.FOUND, same.stderr
    assert measurements(run_dir) == old  # the same question: resumed, nothing new

    fresh = _go([*argv, "--metric", "node_writes", "--fresh"])
    assert fresh.returncode in (RunExit.FOUND, RunExit.USAGE), fresh.stderr
    (kept,) = (run_dir / "earlier").iterdir()
    assert [json.loads(line) for line in (kept / "journal.jsonl").read_text().splitlines()]
    assert {m["id"] for m in measurements(kept)} == {m["id"] for m in old}
    new = journal(run_dir)
    assert new[0]["type"] == "start"
    assert "--fresh" not in new[0]["command"]  # resuming must not start over again
    assert not {m["id"] for m in measurements(run_dir)} & {m["id"] for m in old}
    assert measurements(run_dir), "the fresh run measured nothing"


@pytest.mark.slow
def test_fresh_is_refused_while_the_earlier_run_may_have_a_cluster_up(
    tmp_path: Path, driver: FaultDriver
) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    run_dir = tmp_path / "run"
    argv = run_args(built.path, built.mainline[0], built.mainline[-1], driver, run_dir)
    driver.inject("fail-teardown", "call:3")
    first = _go(argv)
    assert first.returncode == RunExit.LEFT_UP, first.stderr
    result = _go([*argv, "--metric", "node_writes", "--fresh"])
    assert result.returncode == RunExit.USAGE, result.stderr
    assert f"bisector cleanup --run-dir {run_dir}" in result.stderr
    assert not (run_dir / "earlier").exists()


def test_the_question_parts_name_every_part_of_the_question(tmp_path: Path) -> None:
    settings = settings_for(write_local_config(tmp_path / "cfg").config, good="a", bad="b")
    assert len(json.loads(settings.question())) == len(QUESTION_PARTS)


def test_a_journal_from_before_the_question_was_recorded_is_still_checked(
    tmp_path: Path,
) -> None:
    """Journals written before `start` kept the question: their measurements' fingerprint
    (backend config, metric, warmup) and a given threshold still tell another question."""
    cfg = write_local_config(tmp_path / "cfg").config
    settings = settings_for(cfg, good="a" * 40, bad="b" * 40, threshold=20.0)
    old = settings.fingerprint()
    start = Start("a" * 40, "b" * 40, "bisector run ...")
    same: list[Record] = [start, Measured(old, Measurement("c", "t", "bisect", value=3.0))]
    same.append(ThresholdSet(20.0, "given"))
    assert other_question(same, settings, "a" * 40, "b" * 40) is None
    metric = settings_for(cfg, good="a" * 40, bad="b" * 40, metric="node_writes")
    assert other_question(same, metric, "a" * 40, "b" * 40) == (
        "the backend, backend config, warmup or seed"
    )
    calibrated = settings_for(cfg, good="a" * 40, bad="b" * 40)
    assert other_question(same, calibrated, "a" * 40, "b" * 40) == "threshold 20.0, not None"
    assert other_question(same, settings, "a" * 40, "c" * 40) is not None  # the range
