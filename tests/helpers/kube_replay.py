"""A stand-in of the Kubernetes API that answers with a real cluster's recorded answers.

tests/data/k8s holds what a real v1.32 cluster answered, through the official client, in
each scenario an executor meets (a Job complete, its pod deleted, evicted, OOM-killed,
an image missing, a pod no node takes, a foreground delete, a 403, a 404). `FakeCluster`
replays them through the client's own API classes (subclasses of BatchV1Api, CoreV1Api,
AuthorizationV1Api and VersionApi whose methods return the recorded JSON deserialized by
the client's own ApiClient, and whose watches feed the recorded events, as lines, to the
client's own `watch.Watch`): the executor under test sees the models the client makes of
a real answer, never hand-made ones.

Each Job the executor creates is given a scenario (`scenarios`, in creation order; the
last repeats) replayed from its creation, `speed` times faster than recorded. Only the
identity the executor chose is carried into the recorded objects, as the API does: the
Job's name and labels (its pods get them as the Job controller copies them, and their
`job-name` labels), and resourceVersions from one counter (recorded ones repeat across
scenarios). The pod's log is the recorded one, or, with `pod_runner`, what the pod's
command printed when run for real here from the Job the executor made
(`bisector evaluate` on its spec, tests.helpers.kube_pod); with `log_over`, it grows
line by line over that span of the recorded timeline, as a running pod's log does. A
read with `tail_lines` gets the last lines only, as the API's.

Methods the executor does not call are the real client's: they would try to reach a
server at the default host and fail, never answer leniently.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k

from bisector.executors.kubernetes.api import KubeApi

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "k8s"
WATCH_CAP_S = 0.2  # a watch the stand-in holds open at most, whatever timeoutSeconds says


def recording(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def model(raw: dict[str, Any], kind: str) -> Any:
    """Raw API JSON as the client's model (`kind`: V1Job, V1Pod, ...), by its deserializer."""
    return k.ApiClient().deserialize(json.dumps(raw), kind, "application/json")


class _Resp:
    """What the client's HTTP layer hands `watch.Watch` for a watch request: lines of JSON."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self.lines = lines
        self.status = 200

    def stream(self, amt: object = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.lines

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def recorded_exception(answer: dict[str, Any]) -> k.ApiException:
    """The ApiException the client raised, from its recorded status, reason and body."""
    body = answer.get("body")
    return k.ApiException(
        status=answer["status"],
        reason=answer["reason"],
        body=json.dumps(body) if isinstance(body, dict) else body,
    )


@dataclass
class Replay:
    """One Job of the executor's, replaying one recorded scenario."""

    scenario: str
    name: str
    labels: dict[str, str]
    job_spec: dict[str, Any]
    created: float
    data: dict[str, Any] = field(default_factory=dict)
    deleted_at: float | None = None
    log: str | None = None  # what the pod printed, when run for real

    def __post_init__(self) -> None:
        self.data = recording(self.scenario)
        self.recorded_job = str(self.data["answers"]["create_job"]["metadata"]["name"])

    def rename(self, raw: dict[str, Any]) -> dict[str, Any]:
        """A recorded object with the identity the executor gave its Job."""
        obj = copy.deepcopy(raw)
        meta = obj.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        if obj.get("kind") == "Job" or meta.get("name") == self.recorded_job:
            meta["name"] = self.name
            labels.update(self.labels)
            spec = obj.get("spec", {})
            tmpl = spec.get("template", {}).setdefault("metadata", {})
            tmpl.setdefault("labels", {}).update(self.labels)
            # The API's answer carries the executor's own pod template and policy.
            for key in ("activeDeadlineSeconds", "podFailurePolicy"):
                if key in self.job_spec:
                    spec[key] = self.job_spec[key]
        else:  # a pod of the Job: the controller copies the template's labels
            labels.update(self.labels)
            for key in ("job-name", "batch.kubernetes.io/job-name"):
                if key in labels:
                    labels[key] = self.name
            for owner in meta.get("ownerReferences", []):
                if owner.get("kind") == "Job":
                    owner["name"] = self.name
        return obj


class FakeCluster:
    """The recorded answers, through the client's API classes (see the module's doc)."""

    def __init__(
        self,
        scenarios: list[str],
        *,
        namespace: str | None = None,
        speed: float = 20.0,
        pod_runner: Callable[[k.V1Job], str] | None = None,
        gone_after_s: float = 0.2,
        log_over: tuple[float, float] | None = None,
    ) -> None:
        self.scenarios = scenarios
        self.namespace = namespace or str(recording(scenarios[0])["namespace"])
        self.speed = speed
        self.pod_runner = pod_runner
        self.gone_after_s = gone_after_s
        self.log_over = log_over  # (first line, last line): seconds after the create, recorded
        self.replays: list[Replay] = []
        self.lock = threading.Lock()
        self.created: list[str] = []
        self.deleted: list[tuple[str, str | None]] = []  # (name, propagation policy)
        self.log_reads: list[str] = []
        self.tail_reads: list[tuple[str, float]] = []  # (pod, when): reads with tail_lines
        self.version = 1000
        self.delivered: dict[str, list[tuple[int, str, dict[str, Any]]]] = {"jobs": [], "pods": []}
        self._seen: set[tuple[int, int]] = set()  # (replay, event index) delivered

    # -- the timeline ------------------------------------------------------------------------
    def _advance(self) -> None:
        """Deliver every recorded event whose time has come, in time order, each with a
        fresh resourceVersion."""
        now = time.monotonic()
        due: list[tuple[float, int, int, dict[str, Any]]] = []
        for r_i, replay in enumerate(self.replays):
            at = (now - replay.created) * self.speed
            for e_i, event in enumerate(replay.data["watch_events"]):
                if event["t"] <= at and (r_i, e_i) not in self._seen:
                    due.append((replay.created + event["t"] / self.speed, r_i, e_i, event))
        for _, r_i, e_i, event in sorted(due, key=lambda d: d[:3]):
            self._seen.add((r_i, e_i))
            self.version += 1
            obj = self.replays[r_i].rename(event["object"])
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.delivered[event["watch"]].append((self.version, event["type"], obj))

    def _current(self, kind: str, selector: str | None) -> list[dict[str, Any]]:
        latest: dict[str, tuple[str, dict[str, Any]]] = {}
        if kind == "jobs":  # a Job is there from its create's answer on
            for r in self.replays:
                latest[r.name] = ("ADDED", r.rename(r.data["answers"]["create_job"]))
        for _, type_, obj in self.delivered[kind]:
            latest[obj["metadata"]["name"]] = (type_, obj)
        gone = {r.name for r in self.replays if self._is_gone(r)}
        found = []
        for name, (type_, obj) in latest.items():
            if type_ == "DELETED" or name in gone:
                continue
            owner = obj["metadata"].get("labels", {}).get("job-name")
            if owner in gone:
                continue
            if selector and not _matches(obj, selector):
                continue
            found.append(obj)
        return found

    def _is_gone(self, replay: Replay) -> bool:
        return replay.deleted_at is not None and time.monotonic() >= replay.deleted_at + (
            self.gone_after_s
        )

    def replay_of(self, name: str) -> Replay | None:
        return next((r for r in self.replays if r.name == name), None)

    # -- the calls ---------------------------------------------------------------------------
    def create(self, body: k.V1Job) -> k.V1Job:
        raw = k.ApiClient().sanitize_for_serialization(body)  # type: ignore[no-untyped-call]
        name = raw["metadata"]["name"]
        with self.lock:
            if self.replay_of(name) is not None:
                raise k.ApiException(status=409, reason="Conflict")
            scenario = self.scenarios[min(len(self.replays), len(self.scenarios) - 1)]
            replay = Replay(scenario, name, raw["metadata"].get("labels", {}), raw["spec"],
                            time.monotonic())  # fmt: skip
            self.replays.append(replay)
            self.created.append(name)
        if self.pod_runner is not None:
            replay.log = self.pod_runner(body)
        answer = replay.rename(replay.data["answers"]["create_job"])
        created: k.V1Job = model(answer, "V1Job")
        return created

    def list_raw(self, kind: str, selector: str | None) -> dict[str, Any]:
        with self.lock:
            self._advance()
            items = self._current(kind, selector)
            version = str(self.version)
        list_kind = "JobList" if kind == "jobs" else "PodList"
        api = "batch/v1" if kind == "jobs" else "v1"
        return {"apiVersion": api, "kind": list_kind, "items": items,
                "metadata": {"resourceVersion": version}}  # fmt: skip

    def watch_lines(self, kind: str, selector: str | None, since: str | None) -> Iterator[bytes]:
        start = int(since or 0)
        deadline = time.monotonic() + WATCH_CAP_S
        sent = start
        while time.monotonic() < deadline:
            with self.lock:
                self._advance()
                fresh = [d for d in self.delivered[kind] if d[0] > sent]
            for version, type_, obj in fresh:
                sent = version
                if selector and not _matches(obj, selector):
                    continue
                yield (json.dumps({"type": type_, "object": obj}) + "\n").encode()
            time.sleep(0.01)

    def read_job(self, name: str) -> k.V1Job:
        with self.lock:
            self._advance()
            replay = self.replay_of(name)
            if replay is None or self._is_gone(replay):
                gone = recording("foreground-delete")["answers"]["delete_job_when_gone"]
                raise recorded_exception(gone)
            jobs = [o for o in self._current("jobs", None) if o["metadata"]["name"] == name]
            raw = jobs[-1] if jobs else replay.rename(replay.data["answers"]["create_job"])
        job: k.V1Job = model(raw, "V1Job")
        return job

    def delete(self, name: str, propagation: str | None) -> dict[str, Any]:
        with self.lock:
            self.deleted.append((name, propagation))
            replay = self.replay_of(name)
            if replay is None or self._is_gone(replay):
                gone = recording("foreground-delete")["answers"]["delete_job_when_gone"]
                raise recorded_exception(gone)
            if replay.deleted_at is None:
                replay.deleted_at = time.monotonic()
        # The client returns a dict for a foreground delete (recorded).
        answer = recording("foreground-delete")["answers"]["delete_job_foreground"]
        return replay.rename(answer)

    def pod_log(self, pod: str, tail_lines: int | None = None) -> str | None:
        with self.lock:
            self.log_reads.append(pod)
            if tail_lines is not None:
                self.tail_reads.append((pod, time.monotonic()))
            for replay in self.replays:
                names = {p["metadata"]["name"] for p in replay.data["pods"]} | {
                    e["object"]["metadata"]["name"]
                    for e in replay.data["watch_events"]
                    if e["watch"] == "pods"
                }
                if pod not in names:
                    continue
                if replay.log is not None:
                    return self._printed(replay, replay.log, tail_lines)
                answer = replay.data["logs"].get(pod, {}).get("client")
                break
            else:
                answer = None
        if answer is None:
            raise k.ApiException(status=404, reason="Not Found")
        if answer.get("exception"):
            raise recorded_exception(answer)
        value: str | None = answer.get("value")
        return None if value is None else self._printed(replay, value, tail_lines)

    def _printed(self, replay: Replay, log: str, tail_lines: int | None) -> str:
        """What of `log` the pod has printed by now, its last `tail_lines` lines."""
        lines = log.splitlines(keepends=True)
        if self.log_over is not None and lines:
            first, last = self.log_over
            at = (time.monotonic() - replay.created) * self.speed
            step = (last - first) / max(1, len(lines) - 1)
            lines = [line for i, line in enumerate(lines) if first + i * step <= at]
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines > 0 else []
        return "".join(lines)

    def kube_api(self) -> KubeApi:
        return KubeApi(
            self.namespace,
            batch=_Batch(self),
            core=_Core(self),
            auth=_Auth(self),
        )


def _matches(obj: dict[str, Any], selector: str) -> bool:
    labels = obj.get("metadata", {}).get("labels", {})
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class _Batch(k.BatchV1Api):
    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(k.ApiClient())
        self.cluster = cluster

    def create_namespaced_job(self, namespace: str, body: k.V1Job, **_: Any) -> k.V1Job:  # type: ignore[override]
        return self.cluster.create(body)

    def list_namespaced_job(self, namespace: str, **kw: Any) -> Any:  # type: ignore[override]
        """:rtype: V1JobList"""
        selector = kw.get("label_selector")
        if kw.get("watch"):
            return _Resp(self.cluster.watch_lines("jobs", selector, kw.get("resource_version")))
        return model(self.cluster.list_raw("jobs", selector), "V1JobList")

    def read_namespaced_job(self, name: str, namespace: str, **_: Any) -> k.V1Job:  # type: ignore[override]
        return self.cluster.read_job(name)

    def delete_namespaced_job(self, name: str, namespace: str, **kw: Any) -> Any:  # type: ignore[override]
        return self.cluster.delete(name, kw.get("propagation_policy"))


class _Core(k.CoreV1Api):
    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(k.ApiClient())
        self.cluster = cluster

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:  # type: ignore[override]
        """:rtype: V1PodList"""
        selector = kw.get("label_selector")
        if kw.get("watch"):
            return _Resp(self.cluster.watch_lines("pods", selector, kw.get("resource_version")))
        return model(self.cluster.list_raw("pods", selector), "V1PodList")

    def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> Any:  # type: ignore[override]
        return self.cluster.pod_log(name, kw.get("tail_lines"))

    def read_namespace(self, name: str, **_: Any) -> Any:  # type: ignore[override]
        return model({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                     "V1Namespace")  # fmt: skip

    def list_node(self, **_: Any) -> Any:  # type: ignore[override]
        return model(recording("node")["answers"]["list_nodes"], "V1NodeList")


class _Auth(k.AuthorizationV1Api):
    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(k.ApiClient())
        self.cluster = cluster

    def create_self_subject_access_review(self, body: Any, **_: Any) -> Any:  # type: ignore[override]
        answer = recording("forbidden")["answers"]["self_subject_access_review_admin"]
        return model(answer, "V1SelfSubjectAccessReview")
