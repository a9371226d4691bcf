"""The launched clusters of a run, one per slot (`Clusters`), what each holds while it
runs (`Running`), and what launch, warmup and collect all ask of one: are its processes
alive, and its /metrics snapshots."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.base import Candidate
from bisector.backends.procs import api as pa
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import processes as pp
from bisector.collected import APISERVER, metrics_file
from bisector.errors import InfraError

log = logging.getLogger("bisector.procs")


@dataclass
class Running:
    """A launched cluster (one per slot)."""

    layout: pc.Layout
    api: pa.Api
    resource_id: str  # its entry in resources.json
    pids: dict[str, int] = field(default_factory=dict)  # "etcd", "kube-apiserver", ...
    hollow: list[int] = field(default_factory=list)
    before: dict[int, pp.Sample] = field(default_factory=dict)
    warmup_start: float = 0.0
    events_at_start: int = 0  # the load generator's event count when the warmup began
    reopened_at_start: int = 0  # and its count of watches opened again
    # How much longer the warmup's sleeps took than they asked (the process stopped or
    # starved meanwhile): its window grew by as much (load_check.not_stretched).
    overslept_s: float = 0.0
    workload: int | None = None  # the workload's pid, while it may run
    # Whose /metrics is snapshotted at the warmup's start and end, by target name
    # (bisector.collected.metrics_file), besides the apiserver and etcd: any
    # other control-plane process the cluster runs.
    metrics: dict[str, pa.Api] = field(default_factory=dict)

    def all_pids(self) -> dict[str, int]:
        named = dict(self.pids)
        named.update({f"{pc.HOLLOW_PREFIX}{i}": pid for i, pid in enumerate(self.hollow)})
        return named

    def log_of(self, name: str) -> Path:
        """The log of the process `name` (as `all_pids` names it)."""
        files = self.layout.files
        if name.startswith(pc.HOLLOW_PREFIX):
            return files.hollow_log(int(name[len(pc.HOLLOW_PREFIX) :]))
        fixed = {
            "etcd": files.etcd_log,
            "kube-apiserver": files.apiserver_log,
            "watch-load": files.load_log,
        }
        return fixed.get(name) or files.component_log(name)


class Clusters:
    """The run's launched clusters by slot, shared by launch, warmup, collect and teardown
    (slots run in threads of their own)."""

    def __init__(self) -> None:
        self._by_slot: dict[int, Running] = {}
        self._lock = threading.Lock()

    def add(self, slot: int, running: Running) -> None:
        with self._lock:
            self._by_slot[slot] = running

    def get(self, slot: int) -> Running | None:
        with self._lock:
            return self._by_slot.get(slot)

    def pop(self, slot: int) -> Running | None:
        with self._lock:
            return self._by_slot.pop(slot, None)

    def idle(self) -> bool:
        with self._lock:
            return not self._by_slot

    def of(self, candidate: Candidate, error: type[InfraError]) -> Running:
        running = self.get(candidate.slot)
        if running is None:
            raise error(f"no cluster is running for slot {candidate.slot}")
        return running


def alive_or_raise(running: Running, error: type[InfraError], when: str) -> None:
    """A process gone is a skip saying which, how it ended, its log and what the log
    says went wrong (not its tail: a stack trace or an unrelated line)."""
    for name, pid in running.all_pids().items():
        if pp.cpu_seconds(pid) is None:
            path = running.log_of(name)
            raise error(
                f"{name} exited {when} ({pp.how_it_ended(path)}); its log {path}: "
                f"{pp.first_error(path)}"
            )


def snapshot(running: Running, log_dir: Path, when: str, error: type[InfraError]) -> None:
    """Each target's /metrics into `log_dir` (metrics_file): the apiserver, etcd (its
    client URL serves /metrics: etcd's embed/etcd.go serveClients) and the cluster's
    other control-plane processes. The apiserver's is required (the load is judged on
    it); another one that cannot be read is left out, so a metric that reads it is a
    skip saying its file is missing, and no other is."""
    etcd = pa.Api(f"http://127.0.0.1:{running.layout.ports.etcd_client}")
    for target, api in {APISERVER: running.api, "etcd": etcd, **running.metrics}.items():
        path = log_dir / metrics_file(when, target)
        path.unlink(missing_ok=True)  # never an earlier attempt's file
        page = api.try_get("/metrics", timeout=30)
        if page is None and target == APISERVER:
            at = "start" if when == "before" else "end"
            raise error(f"the apiserver's /metrics cannot be read at the warmup's {at}")
        if page is None:
            log.warning("%s's /metrics cannot be read (%s): left out", target, when)
            continue
        path.write_bytes(page)


def load_figures(path: Path) -> dict[str, object]:
    """The load generator's status file (bisector.backends.procs.load write_status)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def count(figures: dict[str, object], key: str) -> int:
    value = figures.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
