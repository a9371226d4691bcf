"""Every Job and pod of the run, as two watches last saw them (one of each per run).

Each watch lists the run's objects (by its label), then watches from the list's
resourceVersion; when the server ends a watch (its timeout) it watches again from the
last version seen, and when that version is too old (410) or the API fails it lists
again (after a pause). An object a list no longer holds was deleted meanwhile: it is
kept as last seen, marked gone, as one a DELETED event ends. The slots read this cache
and wait on it; nothing here decides anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bisector.executors.kubernetes.api import Event, KubeApi, meta, name_of, said
from bisector.executors.kubernetes.faults import Observed

WATCH_S = 60  # each watch's timeoutSeconds
PAUSES_S = (0.5, 1.0, 2.0, 5.0)  # after a failed list or watch, growing


@dataclass
class Seen:
    obj: Any
    gone: bool = False


class _Kind:
    """One kind's cache and the thread that keeps it."""

    def __init__(
        self,
        name: str,
        lister: Callable[[str], tuple[list[Any], str]],
        watcher: Callable[[str, str, int], Iterator[Event]],
    ) -> None:
        self.name = name
        self.lister = lister
        self.watcher = watcher
        self.objects: dict[str, Seen] = {}


class RunWatch:
    """The run's Jobs and pods (label selector `selector`), kept by two threads."""

    def __init__(self, api: KubeApi, selector: str, clock: Callable[[], float] = time.monotonic):
        self.selector = selector
        self.clock = clock
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.jobs = _Kind("jobs", api.list_jobs, api.watch_jobs)
        self.pods = _Kind("pods", api.list_pods, api.watch_pods)
        self.failing_since: float | None = None  # the API has failed every call since then
        self.last_error = ""
        self._threads: list[threading.Thread] = []
        self._listed = {"jobs": threading.Event(), "pods": threading.Event()}

    def start(self, timeout_s: float = 30.0) -> None:
        """Start both watches; returns once each listed once (or `timeout_s` passed)."""
        for kind in (self.jobs, self.pods):
            t = threading.Thread(
                target=self._keep, args=(kind,), daemon=True, name=f"watch-{kind.name}"
            )
            t.start()
            self._threads.append(t)
        for listed in self._listed.values():
            listed.wait(timeout_s)

    def stop(self) -> None:
        self.stopping.set()
        with self.changed:
            self.changed.notify_all()

    # -- what the slots read ---------------------------------------------------------------
    def job(self, name: str) -> Seen | None:
        with self.changed:
            return self.jobs.objects.get(name)

    def all_jobs(self) -> list[Seen]:
        with self.changed:
            return list(self.jobs.objects.values())

    def pods_of(self, job: str) -> list[Observed]:
        """The pods the Job controller made for `job` (their `job-name` label)."""
        with self.changed:
            return [
                Observed(s.obj, s.gone)
                for s in self.pods.objects.values()
                if (meta(s.obj).labels or {}).get("job-name") == job
            ]

    def wait(self, timeout_s: float) -> None:
        """Until something changes, or `timeout_s`."""
        with self.changed:
            self.changed.wait(timeout_s)

    def failing_for(self) -> float:
        """Seconds the API has failed every call of the watches (0: it answers)."""
        since = self.failing_since
        return 0.0 if since is None else self.clock() - since

    # -- the threads -------------------------------------------------------------------------
    def _keep(self, kind: _Kind) -> None:
        failures = 0
        while not self.stopping.is_set():
            try:
                version = self._list(kind)
                self._listed[kind.name].set()
                while not self.stopping.is_set() and version:
                    version = self._watch(kind, version)
                failures = 0
            except Exception as exc:  # the API failed: said, listed again after a pause
                self._failed(exc)
                self._listed[kind.name].set()
                pause = PAUSES_S[min(failures, len(PAUSES_S) - 1)]
                failures += 1
                self.stopping.wait(pause)

    def _list(self, kind: _Kind) -> str:
        items, version = kind.lister(self.selector)
        self._answered()
        with self.changed:
            names = set()
            for obj in items:
                names.add(name_of(obj))
                kind.objects[name_of(obj)] = Seen(obj)
            for name, seen in kind.objects.items():
                if name not in names:
                    seen.gone = True  # deleted while no watch was open
            self.changed.notify_all()
        return version

    def _watch(self, kind: _Kind, version: str) -> str:
        """One watch from `version`; the last version seen ("" when the next step is a list)."""
        from kubernetes.client import ApiException

        try:
            for event in kind.watcher(self.selector, version, WATCH_S):
                self._answered()
                name = name_of(event.object)
                with self.changed:
                    kind.objects[name] = Seen(event.object, event.type == "DELETED")
                    self.changed.notify_all()
                version = str(meta(event.object).resource_version or version)
                if self.stopping.is_set():
                    break
        except ApiException as exc:
            if exc.status == 410:  # too old: list again
                return ""
            raise
        return version

    def _answered(self) -> None:
        self.failing_since = None

    def _failed(self, exc: BaseException) -> None:
        self.last_error = said(exc)
        if self.failing_since is None:
            self.failing_since = self.clock()
