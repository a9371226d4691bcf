"""The report's cost section: the cost model's figures (as --dry-run) beside what a run used."""

from __future__ import annotations

import io
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bisector import proclog
from bisector.backends.sim import SECONDS_PER_NODE_SECOND
from bisector.bisection.pipeline import run_bisection
from bisector.bisection.plan import estimate, plan_bisection
from bisector.bisection.usage import busy_s, cluster_time, cost_summary, launch_started_at
from bisector.cost import KUBEMARK_2017, SearchShape, cost, expected_search
from bisector.durations import format_duration
from bisector.gitrepo import GitRepo
from bisector.measure.journal import Journal, Measured, read_journal
from bisector.measure.measurement import Measurement
from bisector.report.model import Report
from bisector.settings import RunSettings
from bisector.sim.demo_repo import create_demo_repo, demo_config
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

T0 = 1_780_000_000.0  # 2026-05-28T20:26:40Z, a whole second
MIN = 60.0


def _stamp(at: float) -> str:
    """A launch.log header as bisector.proclog writes it (second resolution, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _evaluation(
    run_dir: Path, n: int, started_at: float, duration_s: float, launch_after_s: float | None
) -> Measurement:
    """A measurement of evaluation n; launch_after_s None: it never got to launch."""
    eval_dir = run_dir / "evals" / f"{n:03d}"
    eval_dir.mkdir(parents=True)
    if launch_after_s is not None:
        (eval_dir / "launch.log").write_text(
            f"===== {_stamp(started_at + launch_after_s)} $ cd /wt && "
            "bash -c 'test/kubemark/start-kubemark.sh'\nstarted\n"
            "===== exited with code 0 after 720.0s\n\n"
        )
    return Measurement(
        commit=f"{n:040x}",
        tree=f"{n:040x}",
        phase="bisect",
        value=None if launch_after_s is None else 10.0 * n,
        reason="build: make quick-release exited with code 2" if launch_after_s is None else None,
        duration_s=duration_s,
        launch_attempts=0 if launch_after_s is None else 1,
        eval_dir=str(eval_dir),
        started_at=started_at,
    )


def test_the_real_command_log_header_gives_the_launch_time(tmp_path: Path) -> None:
    before = time.time()
    proclog.begin(tmp_path / "launch.log", ["bash", "-c", "true"], tmp_path).end(
        "", "", "exited with code 0", 0.1
    )
    at = launch_started_at(tmp_path)
    assert at is not None and before - 1 < at <= time.time()  # cut to the second
    assert launch_started_at(tmp_path / "nothing-here") is None


def test_cluster_time_is_launch_to_the_end_of_teardown_not_the_build(tmp_path: Path) -> None:
    # A 2017-like evaluation: 30 min of build, then 49 min of cluster (launch .. teardown).
    m = _evaluation(tmp_path, 1, T0, 79 * MIN, 30 * MIN)
    assert cluster_time(m) == (49 * MIN, False)
    # The build failed: no cluster was ever launched.
    assert cluster_time(_evaluation(tmp_path, 2, T0, 30 * MIN, None)) == (0.0, False)
    # A launch attempted but no command log (an in-process backend): counted whole, said so.
    m3 = _evaluation(tmp_path, 3, T0, 5.0, None)
    assert cluster_time(replace(m3, launch_attempts=1)) == (5.0, True)


def test_wall_time_is_while_evaluations_ran_parallel_slots_overlap() -> None:
    def m(start: float, duration: float) -> Measurement:
        return Measurement("c", "t", "bisect", duration_s=duration, started_at=start)

    # Two slots side by side (0..100, 10..90), then after a pause (a resumed run) 500..560.
    assert busy_s([m(500, 60), m(0, 100), m(10, 80)]) == 160
    assert busy_s([m(0, 100), m(50, 100)]) == 150
    assert busy_s([]) == 0


def test_a_gce_run_reports_the_models_figures_beside_a_known_journals(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 8 + [50] * 9)  # 16 commits after good
    good, bad = built.mainline[0], built.mainline[-1]
    settings = RunSettings(
        good, bad, backend="gce", warmup_s=30 * MIN, price_per_cluster_hour=4.0, revert_check=False
    )
    model = estimate(settings, GitRepo(built.path), good, bad)
    # The model as written down by hand: the 2017 job's phases, git bisect over 16 commits.
    expected = expected_search(SearchShape(16))
    assert (model.expected.evaluations, model.expected.rounds) == (8, 8)
    assert model.phases == KUBEMARK_2017
    costed = cost(expected, KUBEMARK_2017, price_per_cluster_hour=4.0)
    assert costed.wall_s == 15 * MIN + 8 * 79 * MIN and costed.cluster_s == 8 * 49 * MIN

    # The journal of the run: two full evaluations and a build that failed, in a row.
    run_dir = tmp_path / "run"
    journal = Journal(run_dir / "journal.jsonl", tmp_path / "cache.jsonl", "f00d")
    journal.add(_evaluation(run_dir, 1, T0, 79 * MIN, 30 * MIN))
    journal.add(_evaluation(run_dir, 2, T0 + 79 * MIN, 30 * MIN, None))
    journal.add(_evaluation(run_dir, 3, T0 + 109 * MIN, 75 * MIN, 28 * MIN))
    own = [r.measurement for r in read_journal(journal.path) if isinstance(r, Measured)]
    summary = cost_summary(model, own, reused=1, price=4.0)

    assert summary.price_per_cluster_hour == 4.0
    m = summary.model
    assert (m.evaluations, m.rounds) == (8, 8)
    assert m.phases is not None and m.phases.build_s == 30 * MIN and m.phases.setup_s == 15 * MIN
    assert (m.wall_s, m.cluster_s, m.money) == (costed.wall_s, costed.cluster_s, costed.money)
    assert m.money == round(8 * 49 / 60 * 4.0, 2) == 26.13
    assert "2017 kubemark job" in m.basis
    used = summary.measured
    assert (used.evaluations, used.reused, used.counted_whole) == (3, 1, 0)
    assert used.wall_s == (79 + 30 + 75) * MIN
    assert used.cluster_s == (49 + 0 + 47) * MIN
    assert used.cluster_hours == 96 / 60
    assert used.money == round(96 / 60 * 4.0, 2) == 6.4


def test_the_model_in_the_report_is_the_one_dry_run_prints(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [50] * 8)
    config = write_local_config(
        tmp_path / "cfg", run={"estimate": "1h19m", "price_per_cluster_hour": 12.5}
    ).config
    settings = settings_for(
        config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        run_dir=tmp_path / "run",
        threshold=10.0,
    )
    plan = plan_bisection(settings)
    report = run_bisection(settings, progress=PlainProgress(io.StringIO()))
    assert report.cost is not None and plan.cost is not None and plan.expected is not None
    model = report.cost.model
    assert (model.evaluations, model.rounds) == (plan.expected.evaluations, plan.expected.rounds)
    assert (model.wall_s, model.cluster_s, model.money) == (
        plan.cost.wall_s,
        plan.cost.cluster_s,
        plan.cost.money,
    )
    # warmup 0s: the 1h19m split as the 2017 job's other phases (as --dry-run's test says).
    assert model.phases is not None
    assert model.phases.build_s == pytest.approx(4740 * 30 / 49)
    assert "[run] estimate 1h19m" in model.basis
    # Measured: every evaluation of the journal, each with its launch command's log.
    own = [
        r.measurement
        for r in read_journal(tmp_path / "run" / "journal.jsonl")
        if isinstance(r, Measured)
    ]
    used = report.cost.measured
    assert used.evaluations == len(own) == len(report.evaluations) > 0
    assert used.counted_whole == 0
    assert 0 < used.cluster_s <= sum(m.duration_s for m in own)
    assert used.wall_s == pytest.approx(busy_s(own))
    assert used.money == round(used.cluster_s / 3600 * 12.5, 2)


@pytest.mark.slow
def test_a_sim_run_without_estimate_shows_what_was_measured_and_its_own_model_time(
    tmp_path: Path,
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", nodes=3000, seed=5, prs=16)
    config = tmp_path / "demo.toml"
    config.write_text(demo_config(demo, duration="1m"))
    settings = settings_for(
        config, good=demo.good, bad=demo.bad, repo=demo.path, run_dir=tmp_path / "run"
    )
    report = run_bisection(settings, progress=PlainProgress(io.StringIO()))
    assert report.cost is not None
    model, used = report.cost.model, report.cost.measured
    # Without [run] estimate, the sim's own: its nodes for its simulated duration at the
    # measured rate (docs/simulator.md); no price, so no money.
    each = 3000 * 60.0 * SECONDS_PER_NODE_SECOND
    assert model.phases is not None and model.phases.warmup_s == pytest.approx(each)
    assert model.wall_s is not None and model.money is None
    assert "the sim backend's own estimate" in model.basis
    size = len(GitRepo(demo.path).rev_list(demo.good, demo.bad))
    shape = SearchShape(size, revert_check=True)  # on by default: the reverted bad endpoint
    assert model.evaluations == expected_search(shape).evaluations
    # The simulator runs in-process: no launch command, so every cluster time is the
    # evaluation's whole duration, and the report says so.
    journal = read_journal(tmp_path / "run" / "journal.jsonl")
    own = [r.measurement for r in journal if isinstance(r, Measured)]
    assert used.evaluations == len(own) and used.counted_whole == len(own)
    assert used.cluster_s == pytest.approx(sum(m.duration_s for m in own))
    assert used.money is None
    # report.json keeps the figures, typed, and reads back to the same.
    back = Report.read(Path(report.write_json(tmp_path / "run")))
    assert back.cost == report.cost
    assert json.loads((tmp_path / "run" / "report.json").read_text())["version"] == 2


def test_once_phases_are_measured_the_models_time_is_theirs_not_the_estimate(
    tmp_path: Path,
) -> None:
    """A real run whose `[run] estimate` (1h19m an evaluation) is far from what its
    evaluations took (seconds): the model's line keeps its evaluations and rounds and
    takes the run's own phase times, as the live ETA does; the estimate's figure is said
    as what the model said before the run."""
    from bisector.report.costs import MODEL_MEASURED_HEADER, cost_summary_lines, model_header

    built = build_repo(tmp_path / "repo", [1] * 9 + [50] * 8)
    config = write_local_config(tmp_path / "cfg", run={"estimate": "1h19m"}).config
    settings = settings_for(
        config, good=built.mainline[0], bad=built.mainline[-1], repo=built.path,
        run_dir=tmp_path / "run", threshold=10.0,
    )  # fmt: skip
    plan = plan_bisection(settings)
    report = run_bisection(settings, progress=PlainProgress(io.StringIO()))
    assert report.cost is not None and plan.cost is not None
    before, now = report.cost.model, report.cost.model_measured_phases
    assert before.wall_s == plan.cost.wall_s  # before the run: as --dry-run said it
    assert now is not None and now.phases is not None
    assert (now.evaluations, now.rounds) == (before.evaluations, before.rounds)
    assert "measured phase times" in now.basis
    own = [
        r.measurement
        for r in read_journal(tmp_path / "run" / "journal.jsonl")
        if isinstance(r, Measured)
    ]
    per_eval = sum(m.duration_s for m in own) / len(own)
    assert now.wall_s is not None and now.wall_s < 3 * per_eval * now.rounds < 60.0
    assert before.wall_s is not None and before.wall_s > 8 * 3600
    expected, _used = cost_summary_lines(report.cost)
    assert expected.startswith("cost, model (this run's phase times): ")
    assert f"(before the run: wall {format_duration(before.wall_s)})" in expected
    assert model_header(report.cost) == MODEL_MEASURED_HEADER
    back = Report.read(Path(report.write_json(tmp_path / "run")))
    assert back.cost == report.cost


def test_measured_phases_are_each_phases_mean_every_warmup_together() -> None:
    from bisector.bisection.usage import measured_phases

    def m(phase: str, **phase_s: float) -> Measurement:
        return Measurement(commit="c" * 40, tree="t", phase=phase, value=1.0, phase_s=phase_s)

    assert measured_phases([m("endpoint")]) is None  # no phase kept: nothing measured
    got = measured_phases(
        [
            m("endpoint", build=300.0, launch=30.0, warmup=60.0, collect=1.0, teardown=2.0),
            m("bisect", build=40.0, launch=34.0, warmup=10.0, collect=1.0, teardown=2.0),
            m("bisect", build=20.0, launch=26.0, warmup=20.0, collect=1.0, teardown=2.0),
        ]
    )
    assert got is not None
    # The first build is clean; coming ones are expected as the incremental ones.
    assert (got.build_s, got.launch_s, got.warmup_s) == (30.0, 30.0, 30.0)
    assert (got.collect_s, got.teardown_s, got.setup_s) == (1.0, 2.0, 0.0)
