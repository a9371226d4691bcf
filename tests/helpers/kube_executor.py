"""A Kubernetes executor on the recorded-answers stand-in (tests.helpers.kube_replay), for
the sim backend on a demo repository fetched by the pods through a file:// git URL."""

from __future__ import annotations

import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.backends.base import Backend, Candidate
from bisector.backends.registry import create_backend
from bisector.config import Section
from bisector.executors.kubernetes.executor import KubernetesExecutor
from bisector.executors.kubernetes.settings import KubernetesSettings
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings
from bisector.measure.provenance import WindowRule
from bisector.search.progress import Phase
from bisector.settings import RunSettings
from bisector.sim.demo_repo import DemoRepo, demo_config
from tests.helpers.kube_replay import FakeCluster


def kubernetes_table(demo: DemoRepo, namespace: str, **extra: Any) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "image": "localhost/bisector:dev",
        "image_pull_policy": "Never",
        "git_url": f"file://{demo.path}",
        **extra,
    }


def demo_settings(
    demo: DemoRepo,
    table: dict[str, Any],
    *,
    duration: str = "2m",
    parallel: int = 1,
    run_dir: Path | None = None,
) -> RunSettings:
    """The demo's config (the sim backend), its evaluations as Jobs (`table`)."""
    config = tomllib.loads(demo_config(demo, duration))
    config["run"]["executor"] = "kubernetes"
    config["run"]["prefetch_builds"] = 0
    config["search"] = {"parallel": parallel}
    config["executor"] = {"kubernetes": table}
    return RunSettings.from_config(
        Section(config, "demo.toml"), good=demo.good, bad=demo.bad, repo=demo.path, run_dir=run_dir
    )


@dataclass
class Rig:
    """An executor started on a stand-in cluster, the backend the driver holds, a run dir."""

    executor: KubernetesExecutor
    backend: Backend
    cluster: FakeCluster
    run_dir: Path
    settings: RunSettings
    evaluations: int = 0

    def candidate(self, commit: str, slot: int = 0) -> Candidate:
        self.evaluations += 1
        eval_dir = self.run_dir / "evals" / f"{self.evaluations:03d}-{commit[:12]}"
        return Candidate(commit, self.run_dir / "worktrees" / f"slot-{slot}", eval_dir, slot, "lid")

    def evaluation(self, commit: str, tree: str, phase: str = "bisect") -> EvaluationSettings:
        s = self.settings
        return EvaluationSettings(
            s.metric, phase=phase, tree=tree, launch_attempts=1,
            scorer=s.metrics.scorer(s.metric), window=WindowRule(),
        )  # fmt: skip


def make_rig(
    tmp_path: Path, cluster: FakeCluster, settings: RunSettings, *, start: bool = True
) -> Rig:
    cfg = KubernetesSettings.from_section(settings.executor_section)
    run_dir = tmp_path / "run"
    executor = KubernetesExecutor(
        settings, cfg, run_dir, api=cluster.kube_api, poll_s=0.02, say=lambda _text: None
    )
    context = settings.backend_context(run_dir)
    backend = executor.driving(create_backend(settings.backend, context))
    if start:
        backend.setup()
    return Rig(executor, backend, cluster, run_dir, settings)


@dataclass
class Hooks(EvaluationHooks):
    """What the executor said of the evaluation, and a cancel switch."""

    phases: list[str] = field(default_factory=list)
    up: bool = True
    cancel_when: threading.Event | None = None

    def phase_begins(self, phase: Phase) -> None:
        self.phases.append(phase)

    def between_looks(self) -> None:
        if self.cancel_when is not None and self.cancel_when.is_set():
            from bisector.measure.parallel import Interrupted

            raise Interrupted("the run was interrupted")

    def nothing_up(self) -> None:
        self.up = False
