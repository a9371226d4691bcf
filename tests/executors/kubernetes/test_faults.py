"""What a Job and its pods say, read from a real cluster's recorded objects (tests/data/k8s,
v1.32.0-rc.1, client 37.0.3): every fault is a skip naming the pod and the reason, never
a measurement; a pod that waits for a node or an image is `Waiting` (the executor bounds it)."""

from __future__ import annotations

from typing import Any

import pytest

from bisector.executors.kubernetes.faults import Done, Fault, Observed, Running, Waiting, judge
from tests.helpers.kube_replay import model, recording


def _final(name: str) -> tuple[Any, list[Observed]]:
    """The scenario's Job and pods as last seen by its watches (a deleted pod included)."""
    data = recording(name)
    last: dict[str, tuple[str, dict[str, Any]]] = {}
    job: dict[str, Any] = data["job"]
    for event in data["watch_events"]:
        obj = event["object"]
        if event["watch"] == "pods":
            last[obj["metadata"]["name"]] = (event["type"], obj)
        elif event["type"] != "DELETED":
            job = obj
    pods = [Observed(model(obj, "V1Pod"), type_ == "DELETED") for type_, obj in last.values()]
    return model(job, "V1Job"), pods


def _at(name: str, t: float) -> tuple[Any, list[Observed]]:
    """The Job and pods as the watches had them `t` seconds after the create."""
    data = recording(name)
    job = data["answers"]["create_job"]
    pods: dict[str, tuple[str, dict[str, Any]]] = {}
    for event in data["watch_events"]:
        if event["t"] > t:
            break
        if event["watch"] == "pods":
            pods[event["object"]["metadata"]["name"]] = (event["type"], event["object"])
        else:
            job = event["object"]
    return model(job, "V1Job"), [
        Observed(model(o, "V1Pod"), ty == "DELETED") for ty, o in pods.values()
    ]


def test_a_complete_job_is_done_and_names_its_pod() -> None:
    job, pods = _final("complete")
    state = judge(job, pods)
    assert isinstance(state, Done)
    assert state.pod is not None and state.pod.startswith("complete-")


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ("evicted", "was evicted (Eviction API): Eviction API: evicting"),
        ("pfp-evicted", "was evicted (Eviction API)"),
        ("oom-killed", "was OOM-killed (container main, exit 137, memory limit 64Mi)"),
        ("pfp-oom-killed", "was OOM-killed"),
        ("pod-deleted", "was deleted (no eviction or disruption said"),
        ("pfp-pod-deleted", "was deleted (no eviction or disruption said"),
        ("pfp-exit-code", "ended: its command exited 42 Error"),
    ],
)
def test_each_pod_fault_is_a_skip_naming_the_pod_and_the_reason(scenario: str, words: str) -> None:
    job, pods = _final(scenario)
    # pfp-evicted's policy ignored the eviction and a second pod completed: its first pod's
    # fate is the fault to read there, as the executor reads it when the pod fails.
    if scenario == "pfp-evicted":
        pods = [p for p in pods if p.gone]
        job, _ = _at(scenario, 10.0)
    state = judge(job, pods)
    assert isinstance(state, Fault), state
    assert state.pod is not None and state.reason.startswith(f"pod {state.pod} ")
    assert words in state.reason


def test_the_commands_own_exit_code_asks_for_its_log() -> None:
    state = judge(*_final("pfp-exit-code"))
    assert isinstance(state, Fault) and state.needs_log
    deleted = judge(*_final("pod-deleted"))
    assert isinstance(deleted, Fault) and not deleted.needs_log  # a kill says nothing there


def test_a_job_past_its_deadline_names_the_deadline_and_the_pod() -> None:
    state = judge(*_final("deadline-exceeded"))
    assert isinstance(state, Fault)
    assert "ran past its deadline (activeDeadlineSeconds 15)" in state.reason
    assert state.pod is not None and state.pod in state.reason


def test_a_deleted_pod_is_a_fault_while_it_still_terminates() -> None:
    """Without a pod failure policy the Job says FailureTarget at once, while the deleted
    pod still runs (recorded: 2.2 s after create, the pod gone 6 s later)."""
    job, pods = _at("pod-deleted", 2.5)
    assert pods and not any(p.gone for p in pods)
    state = judge(job, pods)
    assert isinstance(state, Fault)
    assert "was deleted" in state.reason


@pytest.mark.parametrize(
    ("scenario", "kind", "words"),
    [
        ("image-never-pull", "image", "ErrImageNeverPull"),
        ("unschedulable-selector", "unschedulable", "didn't match Pod's node affinity/selector"),
        ("unschedulable-resources", "unschedulable", "Insufficient cpu"),
        ("setup-never", "setup", "has not created its sandbox"),
    ],
)
def test_a_pod_that_cannot_start_is_waiting_for_a_reason(
    scenario: str, kind: str, words: str
) -> None:
    state = judge(*_final(scenario))
    assert isinstance(state, Waiting), state
    assert state.kind == kind and words in state.detail
    assert state.pod.startswith(scenario)


def test_a_finished_pod_whose_sandbox_is_gone_is_not_waiting_for_one() -> None:
    """Recorded: once the pod Succeeded its PodReadyToStartContainers is False again (the
    sandbox is torn down), before the Job says Complete."""
    job, pods = _at("complete", 7.5)
    status = pods[0].pod.status
    assert status is not None and status.phase == "Succeeded"
    assert not isinstance(judge(job, pods), Waiting)


def test_a_running_pod_is_running() -> None:
    assert isinstance(judge(*_at("evicted", 1.5)), Running)


def test_a_job_deleted_by_someone_else_is_a_fault() -> None:
    job, pods = _at("foreground-delete", 8.4)
    state = judge(job, pods, job_gone=True)
    assert isinstance(state, Fault) and "was deleted by someone else" in state.reason
