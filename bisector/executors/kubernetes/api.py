"""The Kubernetes API calls the Jobs executor makes, through the official client only.

`KubeApi` holds the client's own API objects (BatchV1Api, CoreV1Api,
AuthorizationV1Api) and names each call the executor makes once: what it
asks, and how an answer that is no error (a 404 that means "gone", a pod log that is
204 or not there yet) reads. Watches are the client's `watch.Watch().stream`. Tests
hand it API objects that answer with a real cluster's recorded answers
(tests/data/k8s), so every model here is what the client makes of a real answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k
from kubernetes import watch

from bisector.errors import BisectorError
from bisector.executors.kubernetes.settings import KubernetesSettings

# What the executor's requests may take before they are given up (seconds): the
# apiserver answers in milliseconds; a minute means it is gone.
REQUEST_TIMEOUT_S = 60.0
NOT_FOUND = 404


@dataclass(frozen=True)
class Event:
    """One watch event: ADDED, MODIFIED, DELETED (BOOKMARK and ERROR never get here)."""

    type: str
    object: Any  # V1Job or V1Pod


def client_for(cfg: KubernetesSettings) -> k.ApiClient:
    """An ApiClient for the configured kubeconfig and context, or the pod's own service
    account (`in_cluster`); one BisectorError line when neither can be read."""
    from kubernetes import config as kc

    try:
        if cfg.in_cluster:
            conf = k.Configuration()
            kc.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
            return k.ApiClient(conf)
        api: k.ApiClient = kc.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=cfg.kubeconfig or None, context=cfg.context or None
        )
        return api
    except (kc.ConfigException, OSError, ValueError, TypeError) as exc:
        where = "the pod's service account" if cfg.in_cluster else (
            f"kubeconfig {cfg.kubeconfig or '$KUBECONFIG or ~/.kube/config'}"
            + (f", context {cfg.context}" if cfg.context else "")
        )  # fmt: skip
        raise BisectorError(
            f"[executor.kubernetes]: cannot use {where}: {exc}; set kubeconfig and context "
            "(or in_cluster = true in a pod)"
        ) from None


def meta(obj: Any) -> k.V1ObjectMeta:
    """An object's metadata: the API always sends it, the client's models say Optional."""
    found = getattr(obj, "metadata", None)
    return found if isinstance(found, k.V1ObjectMeta) else k.V1ObjectMeta()


def name_of(obj: Any) -> str:
    return str(meta(obj).name or "")


def gone(exc: BaseException) -> bool:
    return isinstance(exc, k.ApiException) and exc.status == NOT_FOUND


def said(exc: BaseException) -> str:
    """An API error as one line: its status, reason and the Status' message."""
    if isinstance(exc, k.ApiException):
        import json

        message = ""
        try:
            body = json.loads(exc.body) if exc.body else {}
            message = str(body.get("message", "")) if isinstance(body, dict) else ""
        except (TypeError, ValueError):
            message = str(exc.body or "")[:200]
        return f"HTTP {exc.status} {exc.reason}" + (f": {message}" if message else "")
    return f"{type(exc).__name__}: {exc}"


class KubeApi:
    """The calls, each once; `namespace` is the executor's."""

    def __init__(
        self,
        namespace: str,
        *,
        batch: k.BatchV1Api,
        core: k.CoreV1Api,
        auth: k.AuthorizationV1Api,
    ) -> None:
        self.namespace = namespace
        self.batch = batch
        self.core = core
        self.auth = auth

    @classmethod
    def of(cls, cfg: KubernetesSettings) -> KubeApi:
        api = client_for(cfg)
        return cls(
            cfg.namespace,
            batch=k.BatchV1Api(api),
            core=k.CoreV1Api(api),
            auth=k.AuthorizationV1Api(api),
        )

    @property
    def server(self) -> str:
        """The API server's address, as the client reaches it."""
        return str(self.core.api_client.configuration.host)

    # -- Jobs ------------------------------------------------------------------------------
    def create_job(self, job: k.V1Job) -> k.V1Job:
        return self.batch.create_namespaced_job(
            self.namespace, job, _request_timeout=REQUEST_TIMEOUT_S
        )

    def list_jobs(self, selector: str) -> tuple[list[k.V1Job], str]:
        """The Jobs `selector` matches, and the list's resourceVersion (to watch from)."""
        found = self.batch.list_namespaced_job(
            self.namespace, label_selector=selector, _request_timeout=REQUEST_TIMEOUT_S
        )
        return list(found.items or []), str(getattr(found.metadata, "resource_version", "") or "")

    def watch_jobs(self, selector: str, since: str, timeout_s: int) -> Iterator[Event]:
        yield from self._watch(self.batch.list_namespaced_job, selector, since, timeout_s)

    def delete_job(self, name: str, grace_s: int | None = None) -> bool:
        """Delete the Job and, first, its pods (foreground); False: it was gone already."""
        try:
            self.batch.delete_namespaced_job(
                name,
                self.namespace,
                propagation_policy="Foreground",
                grace_period_seconds=grace_s,
                _request_timeout=REQUEST_TIMEOUT_S,
            )
        except k.ApiException as exc:
            if gone(exc):
                return False
            raise
        return True

    def read_job(self, name: str) -> k.V1Job | None:
        try:
            return self.batch.read_namespaced_job(
                name, self.namespace, _request_timeout=REQUEST_TIMEOUT_S
            )
        except k.ApiException as exc:
            if gone(exc):
                return None
            raise

    # -- pods ------------------------------------------------------------------------------
    def list_pods(self, selector: str) -> tuple[list[k.V1Pod], str]:
        found = self.core.list_namespaced_pod(
            self.namespace, label_selector=selector, _request_timeout=REQUEST_TIMEOUT_S
        )
        return list(found.items or []), str(getattr(found.metadata, "resource_version", "") or "")

    def watch_pods(self, selector: str, since: str, timeout_s: int) -> Iterator[Event]:
        yield from self._watch(self.core.list_namespaced_pod, selector, since, timeout_s)

    def pod_log(
        self,
        pod: str,
        container: str,
        tail_lines: int | None = None,
        timeout_s: float = REQUEST_TIMEOUT_S * 5,  # a log of a few MiB
    ) -> str | None:
        """The container's log (its last `tail_lines` lines); None while there is none
        (the API answers 204 for a pod not started, 400 for a container waiting to start)
        or once the pod is gone."""
        try:
            text = self.core.read_namespaced_pod_log(
                pod,
                self.namespace,
                container=container,
                tail_lines=tail_lines,
                _request_timeout=timeout_s,
            )
        except k.ApiException as exc:
            if exc.status in (400, NOT_FOUND):
                return None
            raise
        return None if text is None else str(text)

    # -- what a preflight asks -----------------------------------------------------------
    def namespace_exists(self) -> bool:
        try:
            self.core.read_namespace(self.namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except k.ApiException as exc:
            if gone(exc):
                return False
            raise
        return True

    def allowed(self, verb: str, resource: str, group: str = "", subresource: str = "") -> bool:
        """What a SelfSubjectAccessReview says of `verb` on `resource` in the namespace."""
        review = k.V1SelfSubjectAccessReview(
            spec=k.V1SelfSubjectAccessReviewSpec(
                resource_attributes=k.V1ResourceAttributes(
                    namespace=self.namespace,
                    verb=verb,
                    group=group,
                    resource=resource,
                    subresource=subresource or None,
                )
            )
        )
        answer = self.auth.create_self_subject_access_review(
            review, _request_timeout=REQUEST_TIMEOUT_S
        )
        return bool(answer.status and answer.status.allowed)

    def nodes(self) -> list[k.V1Node]:
        return list(self.core.list_node(_request_timeout=REQUEST_TIMEOUT_S).items or [])

    # -- watches ---------------------------------------------------------------------------
    def _watch(self, call: Any, selector: str, since: str, timeout_s: int) -> Iterator[Event]:
        w = watch.Watch()  # type: ignore[no-untyped-call]
        stream = w.stream(  # type: ignore[no-untyped-call]
            call,
            self.namespace,
            label_selector=selector,
            resource_version=since or None,
            timeout_seconds=timeout_s,
            allow_watch_bookmarks=True,
            _request_timeout=timeout_s + REQUEST_TIMEOUT_S,
        )
        try:
            for event in stream:
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    yield Event(event["type"], event["object"])
        finally:
            w.stop()  # type: ignore[no-untyped-call]
