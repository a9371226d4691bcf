"""One evaluation from an `EvaluationSpec`, wherever it runs (`bisector evaluate`).

In a Job's pod: a shallow fetch of the one commit (and the revisions its backend checks
out beside it) from the spec's git URL into a fresh repository, as CI pods do (never a
path the driving machine happens to share); the run's settings read again from the
spec; the backend set up; the same `evaluate_candidate` the driving process runs for a
local evaluation; the backend closed; the measurement and the evaluation's files handed
back (bisector.executors.handback). A fetch or a setup that fails is the evaluation's
skip, handed back like any measurement: only a spec that cannot be read, or a bug,
ends the command without a record.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from bisector import proc
from bisector.backends.base import Candidate
from bisector.backends.registry import create_backend
from bisector.backends.steps import Step, run_step, step, tail
from bisector.errors import InfraError
from bisector.executors import handback
from bisector.executors.spec import EvaluationSpec
from bisector.measure.evaluation import EvaluationHooks, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.search.progress import PHASES, Phase

FETCH_TIMEOUT_S = 3600.0  # a whole Kubernetes tree over a slow link
SAID = "bisector-evaluate: "  # how each line of the command's own begins
Say = Callable[[str], None]
_PHASE_LINES: dict[str, Phase] = {f"{SAID}{phase}": phase for phase in PHASES}


class _Said(EvaluationHooks):
    """Each phase said on the output, for a person reading the pod's log and for the
    driving process following it (`phases_said`)."""

    def __init__(self, say: Say) -> None:
        self.say = say

    def phase_begins(self, phase: Phase) -> None:
        self.say(f"{SAID}{phase}")


def phases_said(log: str) -> list[Phase]:
    """The phases `log` says began, in its order: only a line exactly as `_Said` prints it
    says one (the fetch and the setup come before the build and are none)."""
    return [_PHASE_LINES[line] for line in log.splitlines() if line in _PHASE_LINES]


def fetch_steps(spec: EvaluationSpec, src: Path) -> list[Step]:
    """A fresh repository holding the commit checked out, and the revisions beside it."""
    depth = ("--depth", str(spec.fetch_depth)) if spec.fetch_depth else ()
    git = ("git", "-C", str(src))
    steps = [
        step("git", "init", "--quiet", src, timeout=60),
        step(*git, "fetch", "--quiet", "--no-tags", *depth, spec.git_url, spec.commit,
             timeout=FETCH_TIMEOUT_S),
    ]  # fmt: skip
    for rev in spec.revisions:
        # A ref is fetched under its own name (`git worktree add refs/tags/X` finds it).
        wanted = f"+{rev}:{rev}" if rev.startswith("refs/") else rev
        steps.append(
            step(*git, "fetch", "--quiet", "--no-tags", *depth, spec.git_url, wanted,
                 timeout=FETCH_TIMEOUT_S)
        )  # fmt: skip
    steps.append(step(*git, "checkout", "--quiet", "--detach", spec.commit, timeout=600))
    return steps


def fetch(spec: EvaluationSpec, src: Path) -> None:
    """The commit checked out in `src`; InfraError says which fetch failed and why."""
    for s in fetch_steps(spec, src):
        try:
            run_step(s)
        except proc.CommandError as exc:
            raise InfraError(f"{s.render()} failed: {tail(exc)}") from None
    head = run_step(step("git", "-C", str(src), "rev-parse", "HEAD^{tree}", timeout=60))
    if spec.tree and head.stdout.strip() != spec.tree:
        raise InfraError(
            f"{spec.git_url} serves another tree for {spec.commit[:12]} "
            f"({head.stdout.strip()[:12]}, not {spec.tree[:12]}): not the run's repository"
        )


def _skip(spec: EvaluationSpec, eval_dir: Path, step_name: str, reason: str) -> Measurement:
    m = Measurement(spec.commit, spec.tree, spec.phase, reason=f"{step_name}: {reason}")
    m.skipped_at = step_name
    m.started_at = time.time()
    m.why = spec.why
    m.eval_dir = str(eval_dir)
    return m


def evaluate_spec(spec: EvaluationSpec, work: Path, say: Say = print) -> tuple[Measurement, Path]:
    """The measurement of `spec`'s evaluation, made under `work`, and its directory."""
    settings = spec.run_settings()  # a ConfigError here is bad input: no record
    src, run_dir = work / "src", work / "run"
    eval_dir = run_dir / "evals" / (spec.name or spec.commit[:12])
    eval_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    say(f"bisector-evaluate: fetching {spec.commit[:12]} from {spec.git_url}")
    try:
        with proc.logging_to(eval_dir / "fetch.log"):
            fetch(spec, src)
    except InfraError as exc:
        return _skip(spec, eval_dir, "checkout", exc.reason), eval_dir
    fetched_s = time.monotonic() - began
    context = settings.backend_context(run_dir, base_worktree=src)
    backend = create_backend(settings.backend, context)
    say(f"bisector-evaluate: setting up the {settings.backend} backend")
    try:
        with proc.logging_to(eval_dir / "setup.log"):
            backend.setup()
    except InfraError as exc:
        return _skip(spec, eval_dir, "setup", exc.reason), eval_dir
    set_up_s = time.monotonic() - began - fetched_s
    candidate = Candidate(spec.commit, src, eval_dir, 0, spec.launch_id)
    try:
        m = evaluate_candidate(backend, candidate, spec.evaluation_settings(settings), _Said(say))
    finally:
        with contextlib.suppress(InfraError):
            backend.close()
    # Getting the tree and the harness ready is this evaluation's, as a build is.
    m.phase_s["build"] = round(m.phase_s.get("build", 0.0) + fetched_s + set_up_s, 3)
    return m, eval_dir


def hand_back(spec: EvaluationSpec, m: Measurement, eval_dir: Path, say: Say = print) -> None:
    """The measurement and the evaluation's files, back to the driving process."""
    if spec.artifacts == handback.POD_LOG:
        packed = handback.pack(eval_dir, m, handback.POD_LOG_LIMIT)
        if packed.left_out:
            say(f"bisector-evaluate: left out of the log (too large): {', '.join(packed.left_out)}")
        for line in handback.log_lines(packed.data):
            say(line)
        return
    packed = handback.pack(eval_dir, m)
    where = handback.put_object(spec.artifacts, spec.name, packed.data)
    say(f"bisector-evaluate: handed back to {where} ({len(packed.data)} bytes)")
