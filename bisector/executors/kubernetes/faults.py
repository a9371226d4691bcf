"""What a Job and its pods say about an evaluation: running, done, or a fault (a skip).

Read from the API's own objects, as a real cluster sets them (tests/data/k8s records
each case on v1.32):

- done: the Job's `Complete` condition; its record is then read from the pod's log
  (or the bucket).
- failed: the Job's `Failed` or `FailureTarget` condition (the latter comes first, while
  a deleted pod may still be terminating), or a pod in phase Failed. What failed is told
  from the pod: a container `OOMKilled`; a `DisruptionTarget` condition (evicted through
  the Eviction API, preempted, deleted from a lost node, garbage-collected, terminated by
  the kubelet); a pod `status.reason` of `Evicted` (the kubelet's node-pressure eviction);
  a pod deleted by someone (a deletionTimestamp, no disruption said, exit 137); the Job's
  deadline (`DeadlineExceeded`); the command's own exit code.
- waiting: a pod no node takes (`PodScheduled` False, `Unschedulable`) or whose image
  cannot be had (`ErrImageNeverPull`, `ImagePullBackOff`, ...): the API says nothing more
  for as long as one waits (no Job condition comes), so the executor gives it a bound.

Every fault names the pod (or the Job, when it has none) and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client as k

from bisector.executors.kubernetes.api import meta, name_of
from bisector.executors.kubernetes.manifest import CONTAINER

# A container waiting for one of these does not start on its own soon: past a bound, a skip.
PULL_FAILURES = frozenset(
    {
        "ErrImageNeverPull",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ImageInspectError",
        "RegistryUnavailable",
    }
)
START_FAILURES = frozenset({"CreateContainerConfigError", "CreateContainerError"})
# DisruptionTarget reasons (k8s.io/api/core/v1 types.go, v1.32) in words.
DISRUPTIONS = {
    "EvictionByEvictionAPI": "evicted (Eviction API)",
    "PreemptionByScheduler": "preempted by the scheduler for a pod of higher priority",
    "DeletionByTaintManager": "deleted from its node by the taint manager (node not ready or lost)",
    "DeletionByPodGC": "deleted by the pod garbage collector (its node is gone)",
    "TerminationByKubelet": "terminated by its node's kubelet (node pressure or shutdown)",
}


@dataclass(frozen=True)
class Observed:
    """A pod as last seen: its object, and whether the watch saw it deleted."""

    pod: k.V1Pod
    gone: bool = False

    @property
    def name(self) -> str:
        return name_of(self.pod)


@dataclass(frozen=True)
class Running:
    """Still going (or not started yet, with no reason to give up)."""


@dataclass(frozen=True)
class Waiting:
    """A pod stuck for a reason that does not end by itself: `kind` unschedulable, image,
    start or setup; a skip once it has lasted past the executor's bound."""

    pod: str
    kind: str
    detail: str


@dataclass(frozen=True)
class Done:
    """The Job completed: its record is to be read from `pod`."""

    pod: str | None


@dataclass(frozen=True)
class Fault:
    """The evaluation ended without a measurement: a skip with `reason`."""

    reason: str
    pod: str | None = None
    needs_log: bool = False  # the pod's command failed: the end of its log says why


State = Running | Waiting | Done | Fault


def condition(job: k.V1Job, kind: str) -> k.V1JobCondition | None:
    for c in (job.status.conditions if job.status else None) or []:
        if c.type == kind and c.status == "True":
            return c
    return None


def judge(job: k.V1Job | None, pods: list[Observed], job_gone: bool = False) -> State:
    """What the Job and its pods say now (the newest pod is the one that counts)."""
    newest = _newest(pods)
    if job is None or job_gone:
        name = "" if job is None else f" {name_of(job)}"
        pod = f"; its pod {newest.name}: {describe(newest)}" if newest else ""
        return Fault(
            f"the Job{name} was deleted by someone else{pod}", newest.name if newest else None
        )
    if condition(job, "Complete") is not None:
        return Done(newest.name if newest else None)
    failed = condition(job, "Failed") or condition(job, "FailureTarget")
    if failed is not None:
        return _failure(job, failed, newest)
    if newest is not None and newest.pod.status and newest.pod.status.phase == "Failed":
        return _failure(job, None, newest)
    if newest is not None and not newest.gone:
        return _waiting(newest)
    return Running()


def ended(pods: list[Observed], name: str) -> bool:
    """Whether the watch has seen pod `name` end (or go): what describes why it ended."""
    for seen in pods:
        if seen.name != name:
            continue
        pod, status = seen.pod, seen.pod.status
        return (
            seen.gone
            or _terminated(pod) is not None
            or _disrupted(pod) is not None
            or meta(pod).deletion_timestamp is not None
            or (status is not None and status.phase in ("Failed", "Succeeded"))
        )
    return True  # not among the Job's pods (any more): nothing more will be said of it


def _newest(pods: list[Observed]) -> Observed | None:
    if not pods:
        return None
    return max(pods, key=lambda o: (str(meta(o.pod).creation_timestamp or ""), o.name))


def _failure(job: k.V1Job, cond: k.V1JobCondition | None, newest: Observed | None) -> Fault:
    name = name_of(job)
    if cond is not None and cond.reason == "DeadlineExceeded":
        limit = job.spec.active_deadline_seconds if job.spec else None
        pod = f"; its pod {newest.name}: {describe(newest)}" if newest else ""
        return Fault(
            f"the Job {name} ran past its deadline (activeDeadlineSeconds {limit}){pod}",
            newest.name if newest else None,
        )
    if newest is None:
        said = f"{cond.reason}: {cond.message}" if cond is not None else "failed"
        return Fault(f"the Job {name} failed with no pod ({said})")
    exit_code = _exit_code(newest.pod)
    why = describe(newest)
    # The command's own failure (not a kill): the end of its log says why.
    own = exit_code not in (None, 0, 137) and not _disrupted(newest.pod)
    return Fault(f"pod {newest.name} {why}", newest.name, needs_log=own)


def describe(seen: Observed) -> str:
    """Why the pod ended (or how it stands), in words."""
    pod = seen.pod
    status = pod.status
    terminated = _terminated(pod)
    if terminated is not None and terminated.reason == "OOMKilled":
        limit = _memory_limit(pod)
        return f"was OOM-killed (container {CONTAINER}, exit {terminated.exit_code}{limit})"
    disruption = _disrupted(pod)
    if disruption is not None:
        words = DISRUPTIONS.get(str(disruption.reason), f"disrupted ({disruption.reason})")
        message = f": {disruption.message}" if disruption.message else ""
        return f"was {words}{message}"
    if status is not None and status.reason == "Evicted":
        return f"was evicted by its node's kubelet: {status.message or 'no message'}"
    if status is not None and status.reason in ("NodeLost", "UnexpectedAdmissionError"):
        return f"ended {status.reason}: {status.message or 'no message'}"
    code = None if terminated is None else terminated.exit_code
    if meta(pod).deletion_timestamp is not None or (seen.gone and code in (None, 137)):
        how = f", its container killed (exit {code})" if code is not None else ""
        return f"was deleted (no eviction or disruption said: by someone, or its node){how}"
    if terminated is not None:
        reason = f" {terminated.reason}" if terminated.reason else ""
        return f"ended: its command exited {code}{reason}"
    waiting = _waiting_reason(pod)
    if waiting is not None:
        return f"waits: {waiting[0]}: {waiting[1]}"
    phase = status.phase if status is not None else None
    return f"is {phase or 'unknown'}"


def _waiting(seen: Observed) -> State:
    pod = seen.pod
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
            return Waiting(seen.name, "unschedulable", c.message or "Unschedulable")
    waiting = _waiting_reason(pod)
    if waiting is not None:
        reason, message = waiting
        if reason in PULL_FAILURES:
            return Waiting(seen.name, "image", f"{reason}: {message}")
        if reason in START_FAILURES:
            return Waiting(seen.name, "start", f"{reason}: {message}")
    unready = _not_set_up(pod)
    if unready is not None:
        return Waiting(seen.name, "setup", unready)
    return Running()


def _not_set_up(pod: k.V1Pod) -> str | None:
    """Why a pod on a node has no sandbox yet (a volume that never mounts, a network the
    runtime cannot make), or None. Only clusters with the PodReadyToStartContainers
    condition say so; a pulling image is not this (its sandbox exists)."""
    if pod.status is None or pod.status.phase != "Pending":
        return None  # a finished pod's sandbox is gone too: that is not this
    scheduled = ready = None
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == "PodScheduled":
            scheduled = c
        elif c.type == "PodReadyToStartContainers":
            ready = c
    if scheduled is None or scheduled.status != "True" or ready is None or ready.status != "False":
        return None
    node = pod.spec.node_name if pod.spec and pod.spec.node_name else "its node"
    said = f": {ready.reason} {ready.message or ''}".rstrip() if ready.reason else ""
    return f"{node} has not created its sandbox (volumes, network){said}"


def _main(pod: k.V1Pod) -> k.V1ContainerStatus | None:
    for cs in (pod.status.container_statuses if pod.status else None) or []:
        if cs.name == CONTAINER:
            return cs
    return None


def _terminated(pod: k.V1Pod) -> k.V1ContainerStateTerminated | None:
    cs = _main(pod)
    return cs.state.terminated if cs is not None and cs.state is not None else None


def _exit_code(pod: k.V1Pod) -> int | None:
    t = _terminated(pod)
    return None if t is None else int(t.exit_code)


def _waiting_reason(pod: k.V1Pod) -> tuple[str, str] | None:
    cs = _main(pod)
    if cs is None or cs.state is None or cs.state.waiting is None:
        return None
    w = cs.state.waiting
    return str(w.reason or ""), str(w.message or "")


def _disrupted(pod: k.V1Pod) -> k.V1PodCondition | None:
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == "DisruptionTarget" and c.status == "True":
            return c
    return None


def _memory_limit(pod: k.V1Pod) -> str:
    for c in (pod.spec.containers if pod.spec else None) or []:
        if c.name == CONTAINER and c.resources and c.resources.limits:
            memory = c.resources.limits.get("memory")
            if memory:
                return f", memory limit {memory}"
    return ""
