"""Where evaluations run, beside the driving process: its executors.

`[run] executor` names one: `local` (bisector.measure.executor.LocalExecutor: every
evaluation in this process, as always) or `kubernetes` (bisector.executors.kubernetes:
each evaluation one Job whose pod runs `bisector evaluate`, bisector.executors.pod, on
an `EvaluationSpec`, bisector.executors.spec, and hands its measurement back,
bisector.executors.handback). `create_executor` is the one place a run's settings
become its executor; `executor_checks` is what doctor and the run's preflight ask of it.
"""

from __future__ import annotations

from pathlib import Path

from bisector.backends.registry import Finding
from bisector.measure.executor import LOCAL, Executor
from bisector.settings import LOCAL_EXECUTOR, RunSettings


def create_executor(settings: RunSettings, run_dir: Path) -> Executor:
    """The run's executor; its table is read (and refused, one line) here."""
    if settings.executor == LOCAL_EXECUTOR:
        return LOCAL
    from bisector.executors.kubernetes.executor import KubernetesExecutor
    from bisector.executors.kubernetes.settings import KubernetesSettings

    cfg = KubernetesSettings.from_section(settings.executor_section)
    return KubernetesExecutor(settings, cfg, run_dir)


def executor_checks(settings: RunSettings) -> list[Finding]:
    """What must hold for the run's executor to work (nothing for the local one)."""
    if settings.executor == LOCAL_EXECUTOR:
        return []
    from bisector.executors.kubernetes.preflight import check
    from bisector.executors.kubernetes.settings import KubernetesSettings

    return check(KubernetesSettings.from_section(settings.executor_section))
