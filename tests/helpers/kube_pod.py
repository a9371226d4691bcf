"""What a Job's pod prints, made here for real: `bisector evaluate` on the spec the
executor put in the Job (its container's environment), in-process, in a scratch
directory. The git URL in the spec is the test repository's (file://), as a pod's is the
build cluster's git server."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kubernetes import client as k

from bisector.executors.pod import evaluate_spec, hand_back
from bisector.executors.spec import SPEC_ENV, EvaluationSpec


def spec_of(job: k.V1Job) -> EvaluationSpec:
    assert job.spec is not None and job.spec.template.spec is not None
    container = job.spec.template.spec.containers[0]
    env = {e.name: e.value for e in container.env or []}
    return EvaluationSpec.from_json(str(env[SPEC_ENV]))


def run_pod(job: k.V1Job, scratch: Path | None = None) -> str:
    """The output `bisector evaluate` printed for `job`'s spec: the pod's log."""
    spec = spec_of(job)
    work = Path(tempfile.mkdtemp(prefix="pod-", dir=scratch))
    lines: list[str] = []
    m, eval_dir = evaluate_spec(spec, work, lines.append)
    hand_back(spec, m, eval_dir, lines.append)
    return "\n".join(lines) + "\n"
