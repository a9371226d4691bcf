"""Record a real cluster's answers for the Jobs executor's tests (tests/data/k8s/).

    python scripts/real_cluster.py run --kube TREE --dir DIR --image IMAGE.tar -- \\
        .venv/bin/python scripts/record_k8s_answers.py --image localhost/bisector:dev \\
        --out tests/data/k8s [--only NAME ...]

Each scenario runs in a namespace of its own on the cluster KUBECONFIG names, through
the official client, and is written to OUT/<name>.json: the objects as the API sent them
(raw JSON, not the client's models), every watch event on the namespace's Jobs and pods
with the seconds since the Job was created, the namespace's Events, and for calls whose
answer is the point (an eviction, a foreground delete, a 403, a 404) that answer: what the
client returned, or the ApiException's status, reason and body. The namespace is deleted
afterwards. Nothing here decides what an executor should do: the tests do, from these.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k
from kubernetes import config, watch

LABEL = "bisector.io/recording"
POLL_S = 0.2


def raw(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The API's own JSON for a call (not the client's model of it)."""
    resp = call(*args, _preload_content=False, **kwargs)
    data = resp.data if hasattr(resp, "data") else resp.read()
    return json.loads(data)


def failure(exc: k.ApiException) -> dict[str, Any]:
    body: Any = exc.body
    with contextlib.suppress(TypeError, ValueError):
        body = json.loads(exc.body) if exc.body else None
    return {"exception": "ApiException", "status": exc.status, "reason": exc.reason, "body": body}


@dataclass
class Recording:
    name: str
    namespace: str
    what: str
    t0: float = field(default_factory=time.monotonic)
    events: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, kind: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(
                {
                    "t": round(time.monotonic() - self.t0, 3),
                    "watch": kind,
                    "type": event["type"],
                    "object": event["raw_object"],
                }
            )

    def seen(self, test: Callable[[dict[str, Any]], bool]) -> bool:
        with self.lock:
            return any(test(e) for e in self.events)


class Watcher(threading.Thread):
    """Watch one kind in the namespace from the start, until stopped, resuming from the
    last resourceVersion whenever the server ends a watch."""

    def __init__(self, rec: Recording, kind: str, lister: Callable[..., Any]) -> None:
        super().__init__(daemon=True)
        self.rec, self.kind, self.lister = rec, kind, lister
        self.stopping = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        version = raw(self.lister, self.rec.namespace)["metadata"]["resourceVersion"]
        self.ready.set()
        while not self.stopping.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            for event in w.stream(  # type: ignore[no-untyped-call]
                self.lister,
                self.rec.namespace,
                resource_version=version,
                timeout_seconds=2,
                allow_watch_bookmarks=False,
            ):
                if event["type"] == "ERROR":
                    self.rec.note(self.kind, event)
                    continue
                version = event["raw_object"]["metadata"]["resourceVersion"]
                self.rec.note(self.kind, event)
                if self.stopping.is_set():
                    break


@dataclass
class Cluster:
    api: Any
    image: str

    @property
    def core(self) -> k.CoreV1Api:
        return k.CoreV1Api(self.api)

    @property
    def batch(self) -> k.BatchV1Api:
        return k.BatchV1Api(self.api)


@contextmanager
def recording(cl: Cluster, name: str, what: str) -> Iterator[Recording]:
    namespace = f"rec-{name}"
    cl.core.create_namespace(k.V1Namespace(metadata=k.V1ObjectMeta(name=namespace)))
    wait_for(lambda: _has_default_account(cl, namespace), 60, "the default ServiceAccount")
    rec = Recording(name, namespace, what)
    watchers = [
        Watcher(rec, "jobs", cl.batch.list_namespaced_job),
        Watcher(rec, "pods", cl.core.list_namespaced_pod),
    ]
    for w in watchers:
        w.start()
        w.ready.wait(30)
    rec.t0 = time.monotonic()
    try:
        yield rec
        time.sleep(1)  # the last events
    finally:
        for w in watchers:
            w.stopping.set()
        for w in watchers:
            w.join(10)
        cl.core.delete_namespace(namespace, propagation_policy="Foreground")


def _has_default_account(cl: Cluster, namespace: str) -> bool:
    try:
        cl.core.read_namespaced_service_account("default", namespace)
        cl.core.read_namespaced_config_map("kube-root-ca.crt", namespace)
    except k.ApiException:
        return False
    return True


def wait_for(test: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not test():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(POLL_S)
    return time.monotonic() - start


def job(
    cl: Cluster,
    name: str,
    command: Sequence[str],
    *,
    image: str | None = None,
    backoff_limit: int = 0,
    grace_s: int = 5,
    node_selector: dict[str, str] | None = None,
    resources: k.V1ResourceRequirements | None = None,
    pod_failure_policy: k.V1PodFailurePolicy | None = None,
    active_deadline_s: int | None = None,
) -> k.V1Job:
    """The shape the executor's Jobs take: one pod, never restarted in place, the image
    present on the node (imagePullPolicy Never: nothing can be pulled here)."""
    return k.V1Job(
        metadata=k.V1ObjectMeta(name=name, labels={LABEL: name}),
        spec=k.V1JobSpec(
            backoff_limit=backoff_limit,
            active_deadline_seconds=active_deadline_s,
            pod_failure_policy=pod_failure_policy,
            template=k.V1PodTemplateSpec(
                metadata=k.V1ObjectMeta(labels={LABEL: name}),
                spec=k.V1PodSpec(
                    restart_policy="Never",
                    termination_grace_period_seconds=grace_s,
                    node_selector=node_selector,
                    containers=[
                        k.V1Container(
                            name="main",
                            image=image or cl.image,
                            image_pull_policy="Never",
                            command=list(command),
                            resources=resources,
                        )
                    ],
                ),
            ),
        ),
    )


def create(cl: Cluster, rec: Recording, body: k.V1Job) -> None:
    """Create the Job; event times count from the request."""
    rec.t0 = time.monotonic()
    rec.answers["create_job"] = raw(cl.batch.create_namespaced_job, rec.namespace, body)


def job_condition(rec: Recording, *types: str) -> Callable[[], bool]:
    def test() -> bool:
        return rec.seen(
            lambda e: (
                e["watch"] == "jobs"
                and any(
                    c["type"] in types and c["status"] == "True"
                    for c in (e["object"].get("status") or {}).get("conditions") or []
                )
            )
        )

    return test


def pod_running(rec: Recording, count: int = 1) -> Callable[[], bool]:
    def test() -> bool:
        with rec.lock:
            running = {
                e["object"]["metadata"]["name"]
                for e in rec.events
                if e["watch"] == "pods"
                and (e["object"].get("status") or {}).get("phase") == "Running"
            }
        return len(running) >= count

    return test


def pod_waiting(rec: Recording, reason: str) -> Callable[[], bool]:
    def test() -> bool:
        def waits(e: dict[str, Any]) -> bool:
            statuses = (e["object"].get("status") or {}).get("containerStatuses") or []
            return any(
                (s.get("state") or {}).get("waiting", {}).get("reason") == reason for s in statuses
            )

        return rec.seen(lambda e: e["watch"] == "pods" and waits(e))

    return test


def pod_condition(rec: Recording, ctype: str, reason: str) -> Callable[[], bool]:
    def test() -> bool:
        return rec.seen(
            lambda e: (
                e["watch"] == "pods"
                and any(
                    c["type"] == ctype and c.get("reason") == reason
                    for c in (e["object"].get("status") or {}).get("conditions") or []
                )
            )
        )

    return test


def pods_of(cl: Cluster, rec: Recording) -> list[dict[str, Any]]:
    return list(raw(cl.core.list_namespaced_pod, rec.namespace)["items"])


def running_pod(cl: Cluster, rec: Recording) -> str:
    pods = [p for p in pods_of(cl, rec) if p["status"].get("phase") == "Running"]
    return str(pods[0]["metadata"]["name"])


def returned(call: Callable[[], Any]) -> dict[str, Any]:
    """What the client's call gives back with its default deserialisation: the type and
    the value, or the exception."""
    try:
        value = call()
    except k.ApiException as exc:
        return failure(exc)
    except Exception as exc:  # a client that cannot read the answer: recorded
        return {"exception": type(exc).__name__, "message": str(exc)[:2000]}
    shown = value.to_dict() if hasattr(value, "to_dict") else value
    return {"type": type(value).__name__, "value": shown}


def pod_log(cl: Cluster, rec: Recording, name: str) -> dict[str, Any]:
    """The log read both ways: what the client returns, and the HTTP answer itself."""
    try:
        resp: Any = cl.core.read_namespaced_pod_log(name, rec.namespace, _preload_content=False)
        data = resp.data if hasattr(resp, "data") else resp.read()
        http = {"status": resp.status, "body": data.decode(errors="replace")}
    except k.ApiException as exc:
        http = {"status": exc.status, "body": exc.body}
    return {
        "client": returned(lambda: cl.core.read_namespaced_pod_log(name, rec.namespace)),
        "http": http,
    }


def finish(cl: Cluster, rec: Recording, job_name: str | None) -> dict[str, Any]:
    """The final objects and the namespace's Events."""
    out: dict[str, Any] = {}
    if job_name is not None:
        try:
            out["job"] = raw(cl.batch.read_namespaced_job, job_name, rec.namespace)
        except k.ApiException as exc:
            out["job"] = failure(exc)
    out["pods"] = pods_of(cl, rec)
    out["logs"] = {
        pod["metadata"]["name"]: pod_log(cl, rec, pod["metadata"]["name"]) for pod in out["pods"]
    }
    out["k8s_events"] = raw(cl.core.list_namespaced_event, rec.namespace)["items"]
    return out


# -- the scenarios -------------------------------------------------------------------------
DONE = ["sh", "-c", "echo evaluation-done; sleep 2"]
LONG = ["sleep", "300"]  # PID 1: SIGTERM does nothing, the kubelet's SIGKILL ends it
PFP = k.V1PodFailurePolicy(
    rules=[
        k.V1PodFailurePolicyRule(
            action="Ignore",
            on_pod_conditions=[
                k.V1PodFailurePolicyOnPodConditionsPattern(type="DisruptionTarget", status="True")
            ],
        ),
        k.V1PodFailurePolicyRule(
            action="FailJob",
            on_exit_codes=k.V1PodFailurePolicyOnExitCodesRequirement(
                container_name="main", operator="In", values=[42]
            ),
        ),
    ]
)
OOM = ["python", "-c", "b = bytearray(512 * 1024 * 1024); print(len(b))"]
SMALL_MEMORY = k.V1ResourceRequirements(limits={"memory": "64Mi"}, requests={"memory": "64Mi"})


def complete(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "complete", DONE))
    wait_for(job_condition(rec, "Complete", "Failed"), 120, "Complete")
    return "complete"


def pod_deleted(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "pod-deleted", LONG))
    wait_for(pod_running(rec), 120, "Running")
    pod = running_pod(cl, rec)
    rec.answers["delete_pod"] = raw(cl.core.delete_namespaced_pod, pod, rec.namespace)
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "pod-deleted"


def evict(cl: Cluster, rec: Recording) -> None:
    """The eviction, as raw JSON; first a dry run read the client's way (the method is
    declared to return a V1Eviction)."""
    pod = running_pod(cl, rec)
    body = k.V1Eviction(metadata=k.V1ObjectMeta(name=pod, namespace=rec.namespace))
    rec.answers["evict_pod_dry_run_client"] = returned(
        lambda: cl.core.create_namespaced_pod_eviction(pod, rec.namespace, body, dry_run="All")
    )
    rec.answers["evict_pod"] = raw(cl.core.create_namespaced_pod_eviction, pod, rec.namespace, body)


def evicted(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "evicted", LONG))
    wait_for(pod_running(rec), 120, "Running")
    evict(cl, rec)
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "evicted"


def image_never_pull(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "image-never-pull", DONE, image="localhost/bisector-does-not-exist:v0"))
    wait_for(pod_waiting(rec, "ErrImageNeverPull"), 120, "ErrImageNeverPull")
    time.sleep(15)  # it stays so: the Job is still active
    return "image-never-pull"


def setup_never(cl: Cluster, rec: Recording) -> str:
    body = job(cl, "setup-never", DONE)
    assert body.spec is not None and body.spec.template.spec is not None
    pod = body.spec.template.spec
    pod.volumes = [
        k.V1Volume(name="gone", config_map=k.V1ConfigMapVolumeSource(name="bisector-no-such-map"))
    ]
    pod.containers[0].volume_mounts = [k.V1VolumeMount(name="gone", mount_path="/gone")]
    create(cl, rec, body)

    def no_sandbox() -> bool:
        return rec.seen(
            lambda e: (
                e["watch"] == "pods"
                and any(
                    c["type"] == "PodReadyToStartContainers" and c["status"] == "False"
                    for c in (e["object"].get("status") or {}).get("conditions") or []
                )
            )
        )

    wait_for(no_sandbox, 120, "PodReadyToStartContainers False")
    time.sleep(15)  # it stays so: the kubelet retries the mount, the Job is still active
    return "setup-never"


def deadline_exceeded(cl: Cluster, rec: Recording) -> str:
    body = job(
        cl,
        "deadline-exceeded",
        DONE,
        image="localhost/bisector-does-not-exist:v0",
        active_deadline_s=15,
    )
    create(cl, rec, body)
    wait_for(job_condition(rec, "Failed"), 120, "Failed")
    return "deadline-exceeded"


def unschedulable_selector(cl: Cluster, rec: Recording) -> str:
    body = job(
        cl, "unschedulable-selector", DONE, node_selector={"bisector.io/no-such-node": "true"}
    )
    create(cl, rec, body)
    wait_for(pod_condition(rec, "PodScheduled", "Unschedulable"), 120, "Unschedulable")
    time.sleep(10)
    return "unschedulable-selector"


def unschedulable_resources(cl: Cluster, rec: Recording) -> str:
    too_much = k.V1ResourceRequirements(requests={"cpu": "64", "memory": "1Ti"})
    create(cl, rec, job(cl, "unschedulable-resources", DONE, resources=too_much))
    wait_for(pod_condition(rec, "PodScheduled", "Unschedulable"), 120, "Unschedulable")
    time.sleep(10)
    return "unschedulable-resources"


def oom_killed(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "oom-killed", OOM, resources=SMALL_MEMORY))
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "oom-killed"


def pfp_evicted(cl: Cluster, rec: Recording) -> str:
    """Ignore on DisruptionTarget: the evicted pod does not count, a new one runs."""
    body = job(cl, "pfp-evicted", ["sleep", "20"], pod_failure_policy=PFP)
    create(cl, rec, body)
    wait_for(pod_running(rec), 120, "Running")
    evict(cl, rec)
    wait_for(job_condition(rec, "Failed", "Complete"), 180, "Complete or Failed")
    return "pfp-evicted"


def pfp_exit_code(cl: Cluster, rec: Recording) -> str:
    body = job(
        cl,
        "pfp-exit-code",
        ["sh", "-c", "echo failing; exit 42"],
        backoff_limit=3,
        pod_failure_policy=PFP,
    )
    create(cl, rec, body)
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "pfp-exit-code"


def pfp_pod_deleted(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "pfp-pod-deleted", LONG, pod_failure_policy=PFP))
    wait_for(pod_running(rec), 120, "Running")
    pod = running_pod(cl, rec)
    rec.answers["delete_pod"] = raw(cl.core.delete_namespaced_pod, pod, rec.namespace)
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "pfp-pod-deleted"


def pfp_oom_killed(cl: Cluster, rec: Recording) -> str:
    create(cl, rec, job(cl, "pfp-oom-killed", OOM, resources=SMALL_MEMORY, pod_failure_policy=PFP))
    wait_for(job_condition(rec, "Failed", "Complete"), 120, "Failed")
    return "pfp-oom-killed"


def foreground_delete(cl: Cluster, rec: Recording) -> str:
    """What deleting a running Job with propagationPolicy Foreground returns, with the
    client's default deserialisation and as raw JSON, and how the Job goes away."""
    create(cl, rec, job(cl, "foreground-delete", LONG))
    wait_for(pod_running(rec), 120, "Running")
    returned = cl.batch.delete_namespaced_job(
        "foreground-delete", rec.namespace, propagation_policy="Foreground"
    )
    rec.answers["delete_job_foreground_returns_type"] = type(returned).__name__
    rec.answers["delete_job_foreground"] = returned
    rec.answers["delete_job_again_foreground"] = raw(
        cl.batch.delete_namespaced_job,
        "foreground-delete",
        rec.namespace,
        propagation_policy="Foreground",
    )

    def gone() -> bool:
        try:
            cl.batch.read_namespaced_job("foreground-delete", rec.namespace)
        except k.ApiException as exc:
            return bool(exc.status == 404)
        return False

    rec.answers["seconds_until_job_gone"] = round(wait_for(gone, 120, "the Job gone"), 2)
    try:
        cl.batch.delete_namespaced_job(
            "foreground-delete", rec.namespace, propagation_policy="Foreground"
        )
    except k.ApiException as exc:
        rec.answers["delete_job_when_gone"] = failure(exc)
    return "foreground-delete"


def forbidden(cl: Cluster, rec: Recording) -> str | None:
    """A ServiceAccount with no role: its SelfSubjectAccessReview and its Job create."""
    cl.core.create_namespaced_service_account(
        rec.namespace, k.V1ServiceAccount(metadata=k.V1ObjectMeta(name="no-perms"))
    )
    token = cl.core.create_namespaced_service_account_token(
        "no-perms",
        rec.namespace,
        k.AuthenticationV1TokenRequest(
            spec=k.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
        ),
    )
    conf = k.Configuration()
    conf.host = cl.api.configuration.host
    conf.ssl_ca_cert = cl.api.configuration.ssl_ca_cert
    assert token.status is not None
    conf.api_key = {"authorization": f"Bearer {token.status.token}"}
    sa = k.ApiClient(conf)
    review = k.V1SelfSubjectAccessReview(
        spec=k.V1SelfSubjectAccessReviewSpec(
            resource_attributes=k.V1ResourceAttributes(
                namespace=rec.namespace, verb="create", group="batch", resource="jobs"
            )
        )
    )
    rec.answers["self_subject_access_review_admin"] = raw(
        k.AuthorizationV1Api(cl.api).create_self_subject_access_review, review
    )
    rec.answers["self_subject_access_review"] = raw(
        k.AuthorizationV1Api(sa).create_self_subject_access_review, review
    )
    try:
        k.BatchV1Api(sa).create_namespaced_job(rec.namespace, job(cl, "forbidden", DONE))
    except k.ApiException as exc:
        rec.answers["create_job_forbidden"] = failure(exc)
    try:
        k.BatchV1Api(sa).list_namespaced_job(rec.namespace)
    except k.ApiException as exc:
        rec.answers["list_jobs_forbidden"] = failure(exc)
    try:
        k.CoreV1Api(sa).read_namespace(rec.namespace)
    except k.ApiException as exc:
        rec.answers["read_namespace_forbidden"] = failure(exc)
    return None


def missing_namespace(cl: Cluster, rec: Recording) -> str | None:
    ns = "bisector-no-such-namespace"
    try:
        cl.batch.create_namespaced_job(ns, job(cl, "nowhere", DONE))
    except k.ApiException as exc:
        rec.answers["create_job_missing_namespace"] = failure(exc)
    try:
        cl.core.read_namespace(ns)
    except k.ApiException as exc:
        rec.answers["read_namespace_missing"] = failure(exc)
    rec.answers["list_jobs_missing_namespace"] = raw(cl.batch.list_namespaced_job, ns)
    return None


def node(cl: Cluster, rec: Recording) -> str | None:
    """The node as the API shows it: its conditions, allocatable resources and the images
    it holds (status.images: what a preflight can check an image against)."""
    rec.answers["list_nodes"] = raw(cl.core.list_node)
    return None


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    run: Callable[[Cluster, Recording], str | None]


SCENARIOS = (
    Scenario("complete", "a Job whose pod prints and exits 0", complete),
    Scenario(
        "pod-deleted",
        "the running pod deleted (default grace; sleep as PID 1 ignores SIGTERM)",
        pod_deleted,
    ),
    Scenario("evicted", "the running pod evicted through the Eviction API (policy/v1)", evicted),
    Scenario(
        "image-never-pull",
        "an image the node does not have, imagePullPolicy Never",
        image_never_pull,
    ),
    Scenario(
        "setup-never",
        "a pod whose volume never mounts (a ConfigMap that does not exist): no sandbox",
        setup_never,
    ),
    Scenario(
        "deadline-exceeded",
        "the same missing image with activeDeadlineSeconds 15",
        deadline_exceeded,
    ),
    Scenario("unschedulable-selector", "a nodeSelector no node matches", unschedulable_selector),
    Scenario("unschedulable-resources", "requests of 64 CPUs and 1 TiB", unschedulable_resources),
    Scenario("oom-killed", "a 64 MiB limit and a process that allocates 512 MiB", oom_killed),
    Scenario(
        "pfp-evicted",
        "podFailurePolicy (Ignore DisruptionTarget, FailJob exit 42): evicted",
        pfp_evicted,
    ),
    Scenario(
        "pfp-exit-code", "the same policy, backoffLimit 3: the container exits 42", pfp_exit_code
    ),
    Scenario("pfp-pod-deleted", "the same policy: the running pod deleted", pfp_pod_deleted),
    Scenario("pfp-oom-killed", "the same policy: OOM-killed", pfp_oom_killed),
    Scenario(
        "foreground-delete",
        "a running Job deleted with propagationPolicy Foreground",
        foreground_delete,
    ),
    Scenario(
        "forbidden",
        "a ServiceAccount without any role: access review, create, list",
        forbidden,
    ),
    Scenario("node", "the node, its images and allocatable resources", node),
    Scenario(
        "missing-namespace",
        "create, read and list in a namespace that does not exist",
        missing_namespace,
    ),
)


def record(cl: Cluster, scenario: Scenario, out: Path, cluster_info: dict[str, Any]) -> Path:
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with recording(cl, scenario.name, scenario.what) as rec:
        job_name = scenario.run(cl, rec)
        final = finish(cl, rec, job_name)
    doc = {
        "scenario": scenario.name,
        "what": scenario.what,
        "recorded_at": started,
        "cluster": cluster_info,
        "namespace": rec.namespace,
        "answers": rec.answers,
        **final,
        # two watches, one per thread: in the order they arrived, whichever watch
        "watch_events": sorted(rec.events, key=lambda e: e["t"]),
    }
    path = out / f"{scenario.name}.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--image", required=True, help="an image on the node with sh, sleep and python"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", action="append", default=[], help="a scenario's name; repeatable")
    args = parser.parse_args(argv)
    names = {s.name for s in SCENARIOS}
    unknown = sorted(set(args.only) - names)
    if unknown:
        print(
            f"record: no scenario {', '.join(unknown)}; there are {', '.join(sorted(names))}",
            file=sys.stderr,
        )
        return 2
    cl = Cluster(config.new_client_from_config(), args.image)  # type: ignore[no-untyped-call]
    version = raw(k.VersionApi(cl.api).get_code)
    node = raw(cl.core.list_node)["items"][0]
    info = {
        "server": version["gitVersion"],
        "server_commit": version["gitCommit"],
        "client": f"kubernetes (PyPI) {k.__version__ if hasattr(k, '__version__') else ''}".strip(),
        "container_runtime": node["status"]["nodeInfo"]["containerRuntimeVersion"],
        "kernel": node["status"]["nodeInfo"]["kernelVersion"],
        "assembled_by": "scripts/real_cluster.py (docs/jobs-cluster.md)",
        "image": args.image,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for scenario in SCENARIOS:
        if args.only and scenario.name not in args.only:
            continue
        t = time.monotonic()
        path = record(cl, scenario, args.out, info)
        print(f"record: {scenario.name}: {path} ({time.monotonic() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
