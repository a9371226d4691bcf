"""`bisector evaluate [--spec FILE] [--work DIR]`: one evaluation of one commit, handed back.

What a Kubernetes Job's pod runs (`[run] executor = "kubernetes"`, docs/jobs.md): the
spec (`$BISECTOR_EVALUATION`, or --spec FILE) says the commit, the git URL to fetch it
from and the run's settings; the evaluation is the one a local run makes
(bisector.executors.pod), and its measurement and files are handed back as the spec says
(the process's output, or a bucket). A skip (the fetch, the build, the launch ...) is a
measurement too: exit 0 whenever one was handed back.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer

from bisector.errors import BisectorError, InfraError
from bisector.executors.pod import evaluate_spec, hand_back
from bisector.executors.spec import SPEC_ENV, EvaluationSpec
from bisector.exitcodes import EvaluateExit
from bisector.numbers import format_value


def _say(text: str) -> None:
    typer.echo(text)


def read_spec(spec_file: Path | None) -> EvaluationSpec:
    if spec_file is not None:
        try:
            text = spec_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BisectorError(f"cannot read the spec {spec_file}: {exc}") from None
    else:
        text = os.environ.get(SPEC_ENV, "")
        if not text.strip():
            raise BisectorError(f"no evaluation spec: pass --spec FILE or set ${SPEC_ENV}")
    return EvaluationSpec.from_json(text)


def evaluate(spec_file: Path | None, work: Path | None) -> int:
    spec = read_spec(spec_file)
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="bisector-evaluate-"))
    work.mkdir(parents=True, exist_ok=True)
    m, eval_dir = evaluate_spec(spec, work, _say)
    if m.value is None:
        _say(f"bisector-evaluate: {spec.commit[:12]}: no value ({m.reason})")
    else:
        metric = spec.run_settings().metric  # the run's, its default included
        _say(f"bisector-evaluate: {spec.commit[:12]}: {metric}={format_value(m.value, metric)}")
    try:
        hand_back(spec, m, eval_dir, _say)
    except InfraError as exc:
        _say(f"bisector-evaluate: NOT handed back: {exc.reason}")
        return EvaluateExit.NOT_HANDED_BACK
    return EvaluateExit.HANDED_BACK
