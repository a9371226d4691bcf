"""Early verdicts: a warmup whose log already passes the threshold ends there, as *bad*;
nothing else changes (good needs the whole warmup, a skip stays a skip)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bisector.backends.base import Candidate, PartialLogs
from bisector.bisection.pipeline import run_bisection
from bisector.logs import score_logs
from bisector.measure.early import EarlyPolicy, EarlyStop, is_monotone, rescoring
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings, evaluate_candidate
from bisector.measure.journal import Journal, Measured, read_journal
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from bisector.search.progress import Reading
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import GrowingBackend, GrowingFileValue
from tests.helpers.inprocess import bisect_built
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for


def _evaluate(tmp_path: Path, backend: GrowingBackend, threshold: float = 250) -> Measurement:
    assert isinstance(backend, PartialLogs)
    cand = Candidate("c" * 40, tmp_path, tmp_path / "eval")
    early = EarlyStop("conflicts", threshold, 10.0, backend.total_s, rescoring(score_logs))
    return evaluate_candidate(
        backend,
        cand,
        EvaluationSettings("conflicts", window=WindowRule(backend.total_s), early=early),
    )


def test_a_bad_warmup_ends_once_the_log_passes_the_threshold(tmp_path: Path) -> None:
    backend = GrowingBackend(100)
    m = _evaluate(tmp_path, backend)
    assert m.stopped_early == "conflicts 300 >= 250 after 30s of 2m00s"
    assert backend.steps == [
        "build",
        "launch",
        "step 10",
        "step 20",
        "step 30",
        "collect",
        "teardown",
    ]
    # The verdict's value is the collected log's, and its short window is no skip.
    assert m.value == 300 and m.reason is None and m.span_s == 30


def test_a_good_warmup_runs_to_its_end_with_the_same_value(tmp_path: Path) -> None:
    stepped = _evaluate(tmp_path / "a", GrowingBackend(20))
    assert stepped.stopped_early is None and stepped.value == 240  # 12 steps x 20 < 250
    whole = evaluate_candidate(
        GrowingBackend(20),
        Candidate("c" * 40, tmp_path, tmp_path / "b"),
        EvaluationSettings("conflicts", window=WindowRule(120.0)),
    )
    assert whole.value == stepped.value


def test_an_early_stop_never_turns_a_failed_collect_into_bad(tmp_path: Path) -> None:
    m = _evaluate(tmp_path, GrowingBackend(100, collect_fails=True))
    assert m.value is None and m.reason == "collect: scp failed"
    assert m.stopped_early is None  # a skip: the early look decided nothing


def test_a_collected_log_below_the_threshold_is_held_to_the_window(tmp_path: Path) -> None:
    # The peeked file passed the threshold, but what was collected is a short old file
    # with 1 conflict: not bad, and a 5 s log of a 2 min warmup is a skip, not good.
    m = _evaluate(tmp_path, GrowingBackend(100, collect_stale=True))
    assert m.value is None and m.reason is not None and "log covers 5s of 2m00s" in m.reason
    assert m.stopped_early is None


def test_a_log_that_cannot_be_peeked_waits_for_the_whole_warmup(tmp_path: Path) -> None:
    backend = GrowingBackend(100, peek_fails=True)
    m = _evaluate(tmp_path, backend)
    assert m.stopped_early is None and m.value == 1200
    assert backend.steps[-3:] == ["step 120", "collect", "teardown"]


def test_only_metrics_that_grow_during_a_run_stop_early() -> None:
    for name in (
        "conflicts",
        "cacher_hwm",
        "dispatch_lag_s",
        "forced_watcher_closes",
        "node_writes",
        "pod_binding_errors",  # a user-defined request count
    ):
        assert is_monotone(name), name
    for name in ("conflicts_per_min", "cacher_saturated_after_s", "window"):
        assert not is_monotone(name), name


def test_a_run_stopped_early_is_journaled_but_never_cached(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", tmp_path / "cache.jsonl", "fp")
    early = Measurement("c" * 40, "t1", "bisect", value=300.0, stopped_early="conflicts 300 >= 250")
    full = Measurement("d" * 40, "t2", "bisect", value=1200.0)
    journal.add(early)
    journal.add(full)
    (record,) = [
        r
        for r in read_journal(journal.path)
        if isinstance(r, Measured) and r.measurement.tree == "t1"
    ]
    assert record.measurement.stopped_early == "conflicts 300 >= 250"
    # Another run (maybe another threshold) must not take 300 for the commit's value.
    again = Journal(tmp_path / "other.jsonl", tmp_path / "cache.jsonl", "fp")
    assert again.for_tree("t1") == [] and [m.value for m in again.for_tree("t2")] == [1200.0]


# -- through the run: endpoints full length, early stops after, journal and report ------


@pytest.mark.slow
def test_a_bisection_stops_bad_warmups_early_after_the_endpoints(tmp_path: Path) -> None:
    values = [20] * 9 + [400] * 7  # culprit: mainline 9
    built = build_repo(tmp_path / "repo", values)
    backend = GrowingFileValue()
    report, out = bisect_built(
        tmp_path,
        built,
        backend,
        threshold=100.0,
        warmup="10m",
        check_every="1m",
    )
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    # The endpoints ran their whole warmup, though the bad one passed 100 after 3 minutes.
    assert backend.steps_run.get(built.mainline[-1]) in (None, 10)
    early = [e for e in report.evaluations if e.stopped_early]
    assert early and all(e.phase != "endpoint" for e in early)
    for e in early:
        assert built.value(e.commit) == 400  # only bad commits stop early
        assert e.stopped_early == "conflicts 120 >= 100 after 3m00s of 10m00s"
        assert backend.steps_run[e.commit] == 3
    goods = [e for e in report.evaluations if built.value(e.commit) == 20]
    assert goods and all(e.stopped_early is None and e.value == 20 for e in goods)
    assert "stopped early: conflicts 120 >= 100 after 3m00s of 10m00s" in out
    journaled = [
        r.measurement
        for r in read_journal(Path(report.run_dir) / "journal.jsonl")
        if isinstance(r, Measured) and r.measurement.stopped_early
    ]
    assert len(journaled) == len(early)
    saved = json.loads((Path(report.run_dir) / "report.json").read_text())
    assert sum(bool(e["stopped_early"]) for e in saved["evaluations"]) == len(early)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["conflicts_per_min"])
def test_a_rate_metric_never_stops_early(tmp_path: Path, metric: str) -> None:
    values = [1] * 5 + [400] * 5
    built = build_repo(tmp_path / "repo", values)
    backend = GrowingFileValue()
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        metric=metric,
        threshold=5.0,
        warmup="10m",
        check_every="1m",
    )
    report = run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
    assert report.culprit is not None and report.culprit.commit == built.mainline[5]
    assert not any(e.stopped_early for e in report.evaluations)
    assert backend.steps_run == {}  # the warmup ran whole, never in steps


def test_a_look_and_a_collected_log_exactly_at_the_threshold_are_bad(tmp_path: Path) -> None:
    # 50 conflicts per 10 s, threshold 100: the look after 20 s reads exactly 100. At the
    # threshold is bad (as everywhere): the warmup ends there, and the collected log, also
    # exactly 100, is bad with its short window waived (not "log covers 20s of 2m00s").
    backend = GrowingBackend(50)
    m = _evaluate(tmp_path, backend, threshold=100)
    assert m.stopped_early == "conflicts 100 >= 100 after 20s of 2m00s"
    assert backend.steps[-3:] == ["step 20", "collect", "teardown"]
    assert m.value == 100 and m.early_verdict == "bad" and m.reason is None


# -- the early-verdict policy (EarlyPolicy), on its own -----------------------------------


def _policy(*, watchable: bool = True, early_good: bool = False) -> EarlyPolicy:
    return EarlyPolicy(
        metric="conflicts",
        check_every_s=10.0,
        early_good=early_good,
        warmup_s=300.0,
        watchable=watchable,
        growing_scorer=rescoring(score_logs),
    )


def test_a_backend_without_partial_logs_is_never_watched() -> None:
    assert _policy(watchable=False).stop_for(100.0, "bisect") is None
    assert _policy(watchable=False, early_good=True).stop_for(None, "endpoint") is None


def test_search_runs_are_watched_against_the_threshold_the_confirmation_is_not() -> None:
    policy = _policy()
    stop = policy.stop_for(100.0, "bisect")
    assert stop is not None and stop.threshold == 100.0 and stop.every_s == 10.0
    assert policy.stop_for(100.0, "confirm") is None
    assert policy.stop_for(None, "bisect") is None  # no threshold yet: nothing to end on


def test_endpoints_are_watched_only_to_learn_the_onset() -> None:
    assert _policy().stop_for(None, "endpoint") is None
    stop = _policy(early_good=True).stop_for(None, "endpoint")
    assert stop is not None and stop.threshold is None


def test_a_withdrawn_policy_gives_no_early_good_verdicts() -> None:
    policy = _policy(early_good=True)
    bad = Measurement("b" * 40, "t", "endpoint", value=500.0, trajectory=[[60.0, 120.0]])
    assert policy.set_onset([bad], 100.0) is not None and policy.good_on()
    policy.withdrawn = True
    assert not policy.good_on()
    stop = policy.stop_for(100.0, "bisect")
    assert stop is not None and stop.good_after_s is None


def test_each_look_is_passed_on_as_a_reading(tmp_path: Path) -> None:
    """The progress line's metric so far is the early verdicts' own look (issue 29.1)."""
    backend = GrowingBackend(100)
    readings: list[Reading] = []
    early = EarlyStop("conflicts", 250, 10.0, backend.total_s, rescoring(score_logs))

    class Readings(EvaluationHooks):
        def reading(self, reading: Reading) -> None:
            readings.append(reading)

    evaluate_candidate(
        backend,
        Candidate("c" * 40, tmp_path, tmp_path / "eval"),
        EvaluationSettings("conflicts", window=WindowRule(backend.total_s), early=early),
        Readings(),
    )
    assert [(r.elapsed_s, r.value) for r in readings] == [(10, 100), (20, 200), (30, 300)]
    assert readings[-1].describe() == "conflicts 300 >= 250: bad after 30s of 2m00s"
    assert readings[0].describe() == "conflicts 100 < 250 after 10s of 2m00s"
