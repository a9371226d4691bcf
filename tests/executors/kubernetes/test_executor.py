"""The Kubernetes executor against a real cluster's recorded answers (tests/data/k8s),
replayed through the official client's own API classes and watch (tests.helpers.kube_replay):
a Job whose pod hands a record back is the same measurement a local evaluation makes;
every fault a real cluster showed is a skip naming the pod and the reason; the Job is
deleted (foreground) as soon as its answer is in or no longer wanted; a killed driver's
Job is adopted, not launched twice; nothing of the run is left at its end."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k

from bisector.backends.base import Candidate
from bisector.backends.registry import create_backend
from bisector.backends.resources import ResourceRecord
from bisector.executors.kubernetes.manifest import LABEL_RUN
from bisector.gitrepo import GitRepo
from bisector.measure.evaluation import evaluate_candidate
from bisector.measure.parallel import Interrupted
from bisector.sim.demo_repo import DemoRepo, create_demo_repo
from tests.helpers.kube_executor import Hooks, demo_settings, kubernetes_table, make_rig
from tests.helpers.kube_pod import run_pod
from tests.helpers.kube_replay import FakeCluster, recording


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRepo:
    # 1,000 hollow nodes: a log of 2 MB (200 kB gzip'd) fits the pod-log handback.
    return create_demo_repo(tmp_path_factory.mktemp("demo") / "repo", nodes=1000, prs=12)


def _cluster(scenarios: list[str], tmp_path: Path, *, run: bool = True) -> FakeCluster:
    runner = (lambda job: run_pod(job, tmp_path)) if run else None
    return FakeCluster(scenarios, speed=40.0, pod_runner=runner)


def _rig(tmp_path: Path, demo: DemoRepo, cluster: FakeCluster, **table: Any) -> Any:
    settings = demo_settings(
        demo, kubernetes_table(demo, cluster.namespace, **table), duration="30s"
    )
    return make_rig(tmp_path, cluster, settings)


def test_a_completed_job_hands_back_the_measurement_a_local_evaluation_makes(
    tmp_path: Path, demo: DemoRepo
) -> None:
    cluster = _cluster(["complete"], tmp_path)
    rig = _rig(tmp_path, demo, cluster)
    tree = GitRepo(demo.path).tree_of(demo.bad)
    candidate = rig.candidate(demo.bad)
    hooks = Hooks()
    m = rig.executor.evaluate(rig.backend, candidate, rig.evaluation(demo.bad, tree), hooks)

    # The same evaluation run here, in a checkout, with the same backend and evaluation dir.
    local_dir = tmp_path / "local" / candidate.eval_dir.name
    worktree = tmp_path / "local-tree"
    GitRepo(demo.path).add_worktree(worktree, demo.bad)
    local_backend = create_backend("sim", rig.settings.backend_context(tmp_path / "local"))
    local = evaluate_candidate(
        local_backend,
        Candidate(demo.bad, worktree, local_dir, 0, "lid"),
        rig.evaluation(demo.bad, tree),
    )
    assert local.value is not None and local.value > 0
    assert m.value == local.value
    assert m.metrics == local.metrics
    assert m.skipped_at is None and m.reason is None
    # Its files came back into the evaluation's directory, named as local ones are.
    assert [Path(p).relative_to(candidate.eval_dir) for p in m.logs] == [
        Path(p).relative_to(local_dir) for p in local.logs
    ]
    assert all(Path(p).is_file() for p in m.logs)
    assert (candidate.eval_dir / "pod.log").read_text().count("bisector-evaluate: warmup") == 1
    assert m.ran_on.startswith(f"Job {cluster.namespace}/{cluster.created[0]}, pod complete-")
    # Deleted at once, its pod first, and said gone.
    assert cluster.deleted == [(cluster.created[0], "Foreground")]
    assert not hooks.up
    assert hooks.phases[0] == "build" and hooks.phases[-1] == "teardown"


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ("evicted", "was evicted (Eviction API): Eviction API: evicting"),
        ("oom-killed", "was OOM-killed"),
        ("pod-deleted", "was deleted (no eviction or disruption said"),
        ("pfp-exit-code", "ended: its command exited 42"),
        ("deadline-exceeded", "ran past its deadline"),
    ],
)
def test_every_fault_is_a_skip_naming_the_pod_never_a_verdict(
    tmp_path: Path, demo: DemoRepo, scenario: str, words: str
) -> None:
    cluster = _cluster([scenario], tmp_path, run=False)
    rig = _rig(tmp_path, demo, cluster, pull_failing_after="1h")
    candidate = rig.candidate(demo.bad)
    hooks = Hooks()
    m = rig.executor.evaluate(rig.backend, candidate, rig.evaluation(demo.bad, "t"), hooks)
    assert m.value is None and m.skipped_at == "executor" and m.infra_skip
    assert m.reason is not None and words in m.reason, m.reason
    assert f"pod {scenario}-" in m.reason or f"Job {cluster.created[0]}" in m.reason
    assert cluster.deleted == [(cluster.created[0], "Foreground")]
    assert not hooks.up


def test_the_commands_own_failure_says_the_end_of_its_log(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = _cluster(["pfp-exit-code"], tmp_path, run=False)
    rig = _rig(tmp_path, demo, cluster)
    m = rig.executor.evaluate(
        rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), Hooks()
    )
    recorded = next(iter(recording("pfp-exit-code")["logs"].values()))["client"]["value"]
    assert recorded.strip() and recorded.strip().splitlines()[-1] in (m.reason or "")


@pytest.mark.parametrize(
    ("scenario", "key", "words"),
    [
        ("image-never-pull", "pull_failing_after", "its image cannot be had for"),
        ("unschedulable-selector", "unschedulable_after", "no node took it for"),
        ("unschedulable-resources", "unschedulable_after", "Insufficient cpu"),
        ("setup-never", "setup_failing_after", "it was never set up for"),
    ],
)
def test_a_pod_stuck_past_its_bound_is_a_skip(
    tmp_path: Path, demo: DemoRepo, scenario: str, key: str, words: str
) -> None:
    cluster = _cluster([scenario], tmp_path, run=False)
    rig = _rig(tmp_path, demo, cluster, **{key: "1s"})
    began = time.monotonic()
    m = rig.executor.evaluate(
        rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), Hooks()
    )
    assert m.value is None and m.skipped_at == "executor"
    assert m.reason is not None and words in m.reason and f"pod {scenario}-" in m.reason
    assert time.monotonic() - began >= 1.0
    assert cluster.deleted == [(cluster.created[0], "Foreground")]


def test_a_job_that_completes_without_a_record_is_a_skip(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = _cluster(["complete"], tmp_path, run=False)  # its log: "evaluation-done"
    rig = _rig(tmp_path, demo, cluster)
    m = rig.executor.evaluate(
        rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), Hooks()
    )
    assert m.value is None and m.skipped_at == "executor"
    assert "completed without handing back a record" in (m.reason or "")
    assert "evaluation-done" in (m.reason or "")


def test_a_cancelled_run_deletes_its_job_at_once(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = FakeCluster(["evicted"], speed=1.0)  # LONG: the pod would run for minutes
    rig = _rig(tmp_path, demo, cluster)
    cancel = threading.Event()
    hooks = Hooks(cancel_when=cancel)
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(Interrupted):
        rig.executor.evaluate(
            rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), hooks
        )
    assert cluster.deleted == [(cluster.created[0], "Foreground")]
    assert not hooks.up  # the Job is gone: the evaluator journals it torn down


def test_an_api_that_fails_is_a_skip_and_a_bug_is_no_verdict(
    tmp_path: Path, demo: DemoRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = _cluster(["complete"], tmp_path, run=False)
    rig = _rig(tmp_path, demo, cluster)

    def refused(_pod: str, _tail_lines: int | None = None) -> str:
        raise k.ApiException(status=500, reason="Internal Server Error")

    monkeypatch.setattr(cluster, "pod_log", refused)
    m = rig.executor.evaluate(
        rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), Hooks()
    )
    assert m.value is None and m.skipped_at == "executor"
    assert "the Kubernetes API failed: HTTP 500 Internal Server Error" in (m.reason or "")

    def bug(_pod: str, _tail_lines: int | None = None) -> str:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cluster, "pod_log", bug)
    hooks = Hooks()
    with pytest.raises(ZeroDivisionError):
        rig.executor.evaluate(
            rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, "t"), hooks
        )
    assert len(cluster.deleted) == 2 and not hooks.up  # torn down all the same


def test_a_killed_drivers_job_is_adopted_not_launched_twice(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = _cluster(["complete"], tmp_path)
    first = _rig(tmp_path, demo, cluster)
    tree = GitRepo(demo.path).tree_of(demo.bad)
    begun = first.candidate(demo.bad)
    spec = first.executor.spec_for(begun, first.evaluation(demo.bad, tree))
    first.executor._create(spec, begun)  # the driver is killed right after the create
    assert first.executor.watch is not None
    first.executor.watch.stop()

    second = _rig(tmp_path, demo, cluster)  # the rerun: same run directory, same run id
    said = second.executor.left_by_a_crash(begun)
    assert said is not None and cluster.created[0] in said
    second.evaluations = 1
    again = second.candidate(demo.bad)
    m = second.executor.evaluate(second.backend, again, second.evaluation(demo.bad, tree), Hooks())
    assert len(cluster.created) == 1  # adopted, not launched twice
    assert m.value is not None and m.value > 0
    assert cluster.deleted == [(cluster.created[0], "Foreground")]


def test_jobs_at_once_never_pass_parallelism(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = _cluster(["complete"], tmp_path, run=False)
    rig = _rig(tmp_path, demo, cluster, parallelism=1)
    at_once: list[int] = []
    original = cluster.create

    def counted(body: k.V1Job) -> k.V1Job:
        live = [r for r in cluster.replays if r.deleted_at is None]
        at_once.append(len(live) + 1)
        return original(body)

    cluster.create = counted  # type: ignore[method-assign]
    results: list[Any] = []
    threads = [
        threading.Thread(
            target=lambda slot=slot: results.append(
                rig.executor.evaluate(
                    rig.backend,
                    rig.candidate(demo.bad, slot),
                    rig.evaluation(demo.bad, "t"),
                    Hooks(),
                )
            )
        )
        for slot in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 2 and at_once == [1, 1]


def test_the_run_records_its_sweep_and_leaves_nothing(tmp_path: Path, demo: DemoRepo) -> None:
    cluster = FakeCluster(["evicted"], speed=1.0)
    rig = _rig(tmp_path, demo, cluster)
    record = ResourceRecord(rig.run_dir)
    (resource,) = record.load()
    step = resource.teardown[0]
    run_id = rig.executor.run_id
    assert step.cmd[1:3] == ("-m", "bisector.executors.kubernetes.sweep")
    assert ("--run", run_id) == step.cmd[step.cmd.index("--run") : step.cmd.index("--run") + 2]
    # A Job left running (a slot abandoned): the run's close deletes it, and the record goes.
    begun = rig.candidate(demo.bad)
    rig.executor._create(rig.executor.spec_for(begun, rig.evaluation(demo.bad, "t")), begun)
    rig.backend.close()
    assert cluster.deleted == [(cluster.created[0], "Foreground")]
    assert cluster.list_raw("jobs", f"{LABEL_RUN}={run_id}")["items"] == []
    assert record.load() == []
