"""CPU and heap profiles of a candidate's kube-apiserver, taken during its warmup.

For the evaluations the run asks (Candidate.profile: the culprit's and its parent's
confirmation), a thread waits until the last `profile_seconds` of the warmup and reads
`/debug/pprof/profile?seconds=N` from the apiserver, the way each era serves it: the
2017 tree on its insecure port, a module-era tree on its secure port with the run's
token (the cluster's `Api`). Kubernetes serves the profiling routes by default:
`EnableProfiling: true` in k8s.io/apiserver's server config (7043372,
staging/src/k8s.io/apiserver/pkg/server/config.go: routes.Profiling installed when
enabled; `--profiling` defaults to it). After collect, while the cluster still runs,
`/debug/pprof/heap` is read. Both go to the evaluation's `profiles/` with `go.txt`, the
Go the apiserver was built with: its `go tool pprof` diffs them (bisector.pprof).

A profile is evidence beside the measurement, never part of it: one that cannot be
taken is written down in `profiles/errors.txt` and the measurement stands.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Candidate
from bisector.backends.procs.api import Api

CPU = "cpu.pprof"
HEAP = "heap.pprof"
GO = "go.txt"
ERRORS = "errors.txt"
# The CPU profile ends this long before the warmup does (collect begins then).
END_MARGIN_S = 5.0
MIN_SECONDS = 1
ANSWER_S = 60.0  # past the profile's own seconds, for the answer to arrive


@dataclass
class _Taking:
    candidate: Candidate
    api: Api
    seconds: int
    cancelled: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class Profiles:
    """The profiles being taken, one per slot."""

    def __init__(self, profile_seconds: float, warmup_s: float) -> None:
        self.profile_seconds = profile_seconds
        self.warmup_s = warmup_s
        self._taking: dict[int, _Taking] = {}
        self._lock = threading.Lock()

    def window(self) -> tuple[float, int]:
        """(delay after the warmup begins, seconds of CPU profile): the profile covers
        the end of the warmup, where the regression has built up."""
        room = max(self.warmup_s - END_MARGIN_S, MIN_SECONDS)
        seconds = max(MIN_SECONDS, int(min(self.profile_seconds, room)))
        return max(0.0, self.warmup_s - END_MARGIN_S - seconds), seconds

    def start(self, candidate: Candidate, api: Api) -> None:
        """The warmup begins: take the CPU profile at its end, in a thread."""
        if not candidate.profile or self.profile_seconds <= 0:
            return
        delay, seconds = self.window()
        taking = _Taking(candidate, api, seconds)
        taking.thread = threading.Thread(
            target=self._cpu, args=(taking, delay), name="profile", daemon=True
        )
        with self._lock:
            old = self._taking.pop(candidate.slot, None)
            self._taking[candidate.slot] = taking
        if old is not None:
            old.cancelled.set()
        candidate.profile_dir.mkdir(parents=True, exist_ok=True)
        taking.thread.start()

    def _cpu(self, taking: _Taking, delay: float) -> None:
        if taking.cancelled.wait(delay):
            return
        path = f"/debug/pprof/profile?seconds={taking.seconds}"
        _fetch(taking.api, path, taking.candidate.profile_dir / CPU, taking.seconds + ANSWER_S)

    def finish(self, candidate: Candidate, api: Api, go: str | None) -> None:
        """After collect, the cluster still up: the CPU profile's end, then the heap."""
        with self._lock:
            taking = self._taking.pop(candidate.slot, None)
        if taking is None or taking.candidate != candidate:
            return
        # A warmup that ended early (an early verdict, the workload's end) ends a profile
        # not yet begun: left waiting, it would GET whatever holds this port after teardown.
        taking.cancelled.set()
        if taking.thread is not None:
            taking.thread.join(taking.seconds + ANSWER_S)
        _fetch(api, "/debug/pprof/heap", candidate.profile_dir / HEAP, ANSWER_S)
        if go:
            with contextlib.suppress(OSError):  # evidence: never the measurement's failure
                (candidate.profile_dir / GO).write_text(go + "\n", encoding="utf-8")

    def stop(self, slot: int) -> None:
        """The cluster goes down (teardown): a profile not yet begun is not taken."""
        with self._lock:
            taking = self._taking.pop(slot, None)
        if taking is not None:
            taking.cancelled.set()


def _fetch(api: Api, path: str, target: Path, timeout: float) -> None:
    """GET `path` into `target`; a failure is written down beside it, never raised."""
    try:
        body = api.get(path, timeout=timeout)
        if not body:
            raise ValueError("an empty answer")
        target.write_bytes(body)
    except Exception as exc:  # evidence beside the measurement: never the run's failure
        errors = target.parent / ERRORS
        with contextlib.suppress(OSError), errors.open("a", encoding="utf-8") as out:
            out.write(f"GET {path}: {type(exc).__name__}: {exc}\n")
