"""The skip rules the mutation audit found unguarded (issue 30): each test asserts the
behaviour, so the one-line bug that loosens it fails here."""

from __future__ import annotations

import gzip
import time as _time
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.errors import LaunchError
from bisector.logs import score_logs
from bisector.measure import evaluation
from bisector.measure.early import EarlyStop, rescoring
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.provenance import WindowRule, launch_ids
from tests.helpers.fake_backends import LAUNCH, T0, FakeBackend, GrowingBackend, ReplayBackend
from tests.helpers.fake_backends import patch_line as _line
from tests.helpers.local_backend import CONFLICT, WRITE

GARBLED = "\x8f\x01\x02 torn bytes \x00 of a damaged file"


# -- garbled lines -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("garbled", "scored"),
    [(0, True), (1, True), (2, False), (10, False), (15, False), (50, False), (190, False)],
    ids=["none", "one-cut-line", "two", "1%", "1.5%", "5%", "19%"],
)
def test_a_log_with_more_garbled_lines_than_a_cut_one_is_not_scored(
    tmp_path: Path, garbled: int, scored: bool
) -> None:
    """The bound (MAX_GARBLED_PER_FILE): klog writes each line whole, so a healthy file
    holds at most one garbled line, the one cut where it was copied mid-write; more is
    damage, which does not choose its lines. A share of the log is no bound: 1 % of a
    1,000-line log is 10 lines, of a million-line log 10,000, more than a bad commit's
    409s. Here 1,000 lines, 900 of them 409s: from 2 garbled lines (0.2 %) to 19 %, no
    value."""
    lines = (CONFLICT + "\n") * 900 + (WRITE + "\n") * 100 + (GARBLED + "\n") * garbled
    backend = FakeBackend(lines=lines)
    m = evaluate_candidate(
        backend, Candidate("a" * 40, tmp_path, tmp_path / "eval"), EvaluationSettings("conflicts")
    )
    if scored:
        assert m.value == 900 and m.reason is None, m.reason
    else:
        assert m.value is None, m
        assert m.reason is not None and "garbled" in m.reason, m.reason


# -- a launch retried: the log must be the last attempt's ---------------------------------


class _Clock:
    """Wall time the evaluation reads (`time.time`), moved on by the backend; the
    monotonic clock stays real (durations)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return _time.monotonic()


class FirstAttemptLogBackend(ReplayBackend):
    """The first launch attempt starts an apiserver that writes its log, then gives up
    after a minute (a node never ready); the second attempt's apiserver crashes at start
    and writes nothing: collect copies the first attempt's log, the only one there."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock = clock
        self.attempts = 0
        self.log = ""

    def launch(self, candidate: Candidate) -> None:
        self.attempts += 1
        if self.attempts == 1:
            start = self.clock.now + 1
            self.log = _wall(start, 409) * 5 + _wall(start + 20, 200)
            self.clock.now += 60
            raise LaunchError("hollow nodes not ready after 1m")

    def collect(self, candidate: Candidate) -> list[Path]:
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "kube-apiserver.log"
        log.write_text(self.log)
        return [log]


def _wall(when: float, status: int) -> str:
    stamp = _time.strftime("%m%d %H:%M:%S", _time.gmtime(when))
    return (
        f"I{stamp}.{int(when % 1 * 1e6):06d}       7 wrap.go:42] PATCH /api/v1/nodes/n-1/status:"
        f" (3.1ms) {status} [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]\n"
    )


def test_a_failed_launch_attempts_log_is_stale_for_the_attempt_that_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log began a second after the first attempt, 59 s before the second: the
    second attempt's launch time is what it must follow, not the first's."""
    clock = _Clock(_time.time())
    monkeypatch.setattr(evaluation, "time", clock)
    backend = FirstAttemptLogBackend(clock)
    candidate = Candidate("a" * 40, tmp_path, tmp_path / "eval", 0, LAUNCH)
    m = evaluate_candidate(
        backend, candidate, EvaluationSettings("conflicts", window=WindowRule(real_time=True))
    )
    assert m.launch_attempts == 2
    assert m.value is None, m
    assert m.reason is not None and m.reason.startswith("stale log: it starts 59"), m.reason


# -- a skip keeps no early verdict -------------------------------------------------------


def test_a_run_ended_early_as_bad_whose_log_is_then_a_skip_keeps_no_early_verdict(
    tmp_path: Path,
) -> None:
    """The look passed the threshold (an early bad verdict), but the collected log is
    damaged: a skip, and neither `stopped_early` nor `early_verdict` may say otherwise
    (the report and the safety net read them as a verdict)."""

    class Damaged(GrowingBackend):
        def collect(self, candidate: Candidate) -> list[Path]:
            logs = super().collect(candidate)
            with logs[0].open("a") as f:
                f.write((GARBLED + "\n") * 3)
            return logs

    backend = Damaged(100)
    early = EarlyStop("conflicts", 250.0, 10.0, backend.total_s, rescoring(score_logs))
    m = evaluate_candidate(
        backend,
        Candidate("c" * 40, tmp_path, tmp_path / "eval"),
        EvaluationSettings("conflicts", window=WindowRule(120.0), early=early),
    )
    assert "step 30" in backend.steps and "step 120" not in backend.steps  # it ended early
    assert m.value is None and m.reason is not None and "garbled" in m.reason, m
    assert m.early_verdict is None and m.stopped_early is None


# -- a launch id split across the reader's chunks ------------------------------------------


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_launch_id_split_across_read_chunks_is_found_whole(tmp_path: Path, gz: bool) -> None:
    """Every place the chunk boundary can fall, in the mark or in the id: the id is
    found, whole, and nothing else (half an id is another launch's, to the rule)."""
    launch = "0123456789abcdef0123456789abcdef"
    line = f"I0602 05:51:09.000000       7 server.go:105] bisector-launch-id={launch}\n"
    chunk = 64
    for cut in range(len(line)):
        text = "x" * (chunk - cut) + "\n" + line + "I0602 05:51:10.000000 7 wrap.go:42] end\n"
        path = tmp_path / f"{cut}.log"
        if gz:
            path = path.with_suffix(".log.gz")
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        assert launch_ids([str(path)], chunk=chunk) == {launch}, cut


# -- boundaries ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "scored"),
    [(240.0, False), (299.0, False), (300.0, True), (600.0, True)],
    ids=["240s", "299s", "300s-the-bound", "600s"],
)
def test_a_log_shorter_than_half_the_endpoints_logs_is_cut_short(
    tmp_path: Path, span: float, scored: bool
) -> None:
    """The endpoints' logs cover 600 s and the run took no time of its own (a warmup of
    0): a log must cover MIN_COVERAGE (half) of 600 s. 240 s is an apiserver restarted
    or a log cut short: no value."""
    lines = _line(T0, 200) + _line(T0 + span / 2, 409) * 5 + _line(T0 + span, 200)
    backend = FakeBackend(lines=lines)
    m = evaluate_candidate(
        backend,
        Candidate("a" * 40, tmp_path, tmp_path / "eval"),
        EvaluationSettings("conflicts", window=WindowRule(600.0)),
    )
    if scored:
        assert m.value == 5 and m.reason is None, m.reason
    else:
        assert m.value is None, m
        shown = f"{int(span) // 60}m{int(span) % 60:02d}s"
        assert m.reason == f"log covers {shown} of 10m00s: apiserver restarted or log cut short"
