"""Each evaluation says its phases as they begin and measures their times (issue 29.1):
build, launch (every attempt and the teardowns between), ready, warmup, collect,
teardown; Measurement.phase_s is journaled (older journals: test_measurement.py)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.bisection.start import open_bisection, prepare_bisection
from bisector.errors import BuildError, LaunchError
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.search.progress import Phase
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import whole_range
from tests.helpers.repo import build_repo


class Clocked(FileValueBackend):
    """Each step takes a known time on a fake clock; the first launches may fail."""

    def __init__(self, now: list[float], failed_launches: int = 0) -> None:
        super().__init__()
        self.now = now
        self.failed_launches = failed_launches

    def build(self, candidate: Candidate) -> None:
        self.now[0] += 10
        super().build(candidate)

    def launch(self, candidate: Candidate) -> None:
        self.now[0] += 5
        if self.failed_launches:
            self.failed_launches -= 1
            raise LaunchError("cluster did not come up")

    def warmup(self, candidate: Candidate) -> None:
        self.now[0] += 300

    def collect(self, candidate: Candidate) -> list[Path]:
        self.now[0] += 2
        return super().collect(candidate)

    def teardown(self, candidate: Candidate) -> None:
        self.now[0] += 1


def _candidate(tmp_path: Path, value: int = 7) -> Candidate:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "value").write_text(f"{value}\n")
    return Candidate("c" * 40, worktree, tmp_path / "evals" / "001", 0, "a" * 32)


class SaidPhases(EvaluationHooks):
    """Keeps each phase the evaluation says, in order."""

    def __init__(self, said: list[Phase]) -> None:
        self.said = said

    def phase_begins(self, phase: Phase) -> None:
        self.said.append(phase)


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])  # evaluation.py reads it
    return clock


def test_phases_are_said_in_order_and_timed(tmp_path: Path, now: list[float]) -> None:
    said: list[Phase] = []
    m = evaluate_candidate(
        Clocked(now, failed_launches=1),
        _candidate(tmp_path),
        EvaluationSettings("conflicts", launch_attempts=2),
        SaidPhases(said),
    )
    assert m.value == 7
    assert said == ["build", "launch", "ready", "warmup", "collect", "teardown"]
    # The launch: two attempts of 5 s and the teardown between them (1 s).
    assert m.phase_s == {"build": 10, "launch": 11, "warmup": 300, "collect": 2, "teardown": 1}
    assert Measurement.from_dict(m.to_dict()).phase_s == m.phase_s  # journaled


def test_a_failed_build_measures_only_the_build(tmp_path: Path, now: list[float]) -> None:
    class Broken(Clocked):
        def build(self, candidate: Candidate) -> None:
            self.now[0] += 10
            raise BuildError("does not compile")

    said: list[Phase] = []
    m = evaluate_candidate(
        Broken(now), _candidate(tmp_path), EvaluationSettings("conflicts"), SaidPhases(said)
    )
    assert m.value is None and m.skipped_at == "build"
    assert said == ["build"]  # nothing launched: no teardown phase
    assert m.phase_s == {"build": 10}


def test_a_resumed_run_predicts_from_the_phases_its_earlier_session_measured(
    tmp_path: Path,
) -> None:
    """The endpoints measured by the session a Ctrl-C ended are this run's figures: the
    resumed session, which measures no endpoint itself, still says an ETA."""

    class InterruptedSearch(FileValueBackend):
        def warmup(self, candidate: Candidate) -> None:
            if candidate.commit not in (built.mainline[0], built.mainline[-1]):
                raise KeyboardInterrupt

    built = build_repo(tmp_path / "repo", [1] * 5 + [9] * 4)
    settings = whole_range(tmp_path, built, threshold=5.0)
    with pytest.raises(KeyboardInterrupt):
        run_bisection(settings, backend=InterruptedSearch(), progress=PlainProgress(io.StringIO()))
    out = io.StringIO()
    report = run_bisection(settings, backend=FileValueBackend(), progress=PlainProgress(out))
    assert report.eta is not None and report.eta.predicted_s is not None, out.getvalue()


def test_the_eta_counts_confirmations_at_a_full_runs_length(tmp_path: Path) -> None:
    """The real 2017 hunt (4 December 2026): search runs ended after 10-20 s of warmup,
    the three confirmations ran the full minute (1m27s each), and the line said "~3 runs
    left | ETA 2m31s", the confirmations counted as search runs."""
    built = build_repo(tmp_path / "repo", [1] * 3 + [9] * 3)
    settings = whole_range(tmp_path, built, threshold=5.0)
    prepared = prepare_bisection(settings, backend=FileValueBackend())
    with open_bisection(prepared, progress=PlainProgress(io.StringIO())) as b:
        times = b.evaluator.phase_times
        full = {"build": 0.0, "launch": 30.0, "warmup": 60.0, "collect": 1.0, "teardown": 1.0}
        times.add(full, search=False)  # an endpoint
        times.add({**full, "warmup": 10.0}, search=True)  # a search run's early verdict
        b.evaluator.expect(3)
        assert b.evaluator.eta_s() == pytest.approx(3 * 42.0)
        b.evaluator.expect(3, full_length=True)
        assert b.evaluator.eta_s() == pytest.approx(3 * 92.0)
