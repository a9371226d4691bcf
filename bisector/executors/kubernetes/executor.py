"""Evaluations as Kubernetes Jobs: `[run] executor = "kubernetes"`.

Each evaluation is one `batch/v1` Job (bisector.executors.kubernetes.manifest) whose pod
runs `bisector evaluate` on its spec (bisector.executors.spec): a shallow fetch of the
commit from `git_url`, the run's backend, the same `evaluate_candidate`, the measurement
and the evaluation's files handed back (bisector.executors.handback). The slot follows
its Job and pod through the run's two watches (bisector.executors.kubernetes.watch) and
reads what they say (bisector.executors.kubernetes.faults): a record handed back is the
measurement, anything else is a skip naming the pod and the reason, never a verdict.
The Job is deleted as soon as its answer is in, or no longer wanted (the run cancelled:
Ctrl-C, SIGTERM), by the slot's teardown; `close` deletes whatever of the run is left.

A rerun after a kill -9 of the driving process finds the run's Jobs by label: one still
running, or finished with its record, is adopted by the evaluation that asks for its
commit (and phase) again, not launched twice. resources.json holds the step that deletes
everything of the run (bisector.executors.kubernetes.sweep), replayed by `bisector cleanup`.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kubernetes import client as k

from bisector.backends.base import Backend, Candidate, ForwardingBackend
from bisector.backends.resources import Resource, ResourceRecord
from bisector.backends.steps import Step
from bisector.errors import BisectorError, InfraError
from bisector.executors import handback
from bisector.executors.kubernetes import faults
from bisector.executors.kubernetes.api import KubeApi, meta, name_of, said
from bisector.executors.kubernetes.manifest import (
    CONTAINER,
    LABEL_COMMIT,
    LABEL_EVALUATION,
    LABEL_PHASE,
    job_for,
    run_selector,
)
from bisector.executors.kubernetes.settings import KubernetesSettings
from bisector.executors.kubernetes.sweep import sweep
from bisector.executors.kubernetes.watch import RunWatch, Seen
from bisector.executors.pod import phases_said
from bisector.executors.spec import (
    EarlySpec,
    EvaluationSpec,
    WindowSpec,
    revisions_needed,
    run_config,
)
from bisector.measure.evaluation import EvaluationHooks, EvaluationSettings
from bisector.measure.measurement import Measurement
from bisector.search.progress import PHASES, Phase
from bisector.settings import RunSettings

RUN_FILE = "kubernetes.json"  # in the run directory: the run's id, its Jobs' label
SKIP_KIND = "executor"  # Measurement.skipped_at of an evaluation the executor lost
API_LOST_S = 300.0  # the API failing every call this long: the slot's Job is a skip
LOG_TAIL = 40  # lines of a failed pod's log said with its skip
# A running pod's log is read this often for the phase it says (each read one API call)
# and only its last lines: the command's own lines are a few, its steps log to files.
PHASE_LOOK_S = 5.0
# How long a failed Job's skip waits for its pod's own end to reach the watch.
POD_SETTLE_S = 10.0
PHASE_TAIL = 20
PHASE_READ_TIMEOUT_S = 15.0  # a read that hangs holds the slot's watch of its Job
Say = Callable[[str], None]


def _stderr(text: str) -> None:
    print(f"bisector: {text}", file=sys.stderr, flush=True)


def run_id_of(run_dir: Path) -> str:
    """The run's id (10 hex digits), made once and kept in the run directory: a rerun of
    the same run finds its Jobs by it."""
    path = run_dir / RUN_FILE
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        found = str(json.loads(path.read_text(encoding="utf-8"))["run"])
        if found.isalnum() and len(found) <= 16:
            return found
    run = uuid.uuid4().hex[:10]
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": run}) + "\n", encoding="utf-8")
    return run


def _api_errors() -> tuple[type[BaseException], ...]:
    """What a failing API raises through the client: an HTTP error, the connection, and
    a pod's log that is not UTF-8 (the client decodes a log's bytes strictly; a pod may
    print any bytes a command gave it)."""
    import urllib3

    return (k.ApiException, urllib3.exceptions.HTTPError, OSError, UnicodeDecodeError)


class KubernetesExecutor:
    name = "kubernetes"
    checks_out = False  # the pod fetches its own tree
    builds_ahead = False  # a build in the driving process serves no pod

    def __init__(
        self,
        settings: RunSettings,
        cfg: KubernetesSettings,
        run_dir: Path,
        *,
        api: Callable[[], KubeApi] | None = None,
        poll_s: float = 1.0,
        phase_look_s: float = PHASE_LOOK_S,
        clock: Callable[[], float] = time.monotonic,
        say: Say = _stderr,
    ) -> None:
        self.settings = settings
        self.cfg = cfg
        self.run_dir = run_dir
        self._make_api = api or (lambda: KubeApi.of(cfg))
        self._api: KubeApi | None = None
        self.poll_s = poll_s
        self.phase_look_s = phase_look_s
        self.clock = clock
        self.say = say
        self.run_id = ""
        self.watch: RunWatch | None = None
        self.lock = threading.Lock()
        # Jobs a slot of this session followed or follows: never adopted again.
        self.claimed: set[str] = set()
        self.job_of: dict[str, str] = {}  # evaluation name -> the Job that runs it
        self.at_once = threading.BoundedSemaphore(cfg.parallelism) if cfg.parallelism else None
        self._config = run_config(settings)
        self._revisions = revisions_needed(settings)

    @property
    def api(self) -> KubeApi:
        if self._api is None:
            self._api = self._make_api()
        return self._api

    def driving(self, backend: Backend) -> Backend:
        return JobsBackend(backend, self)

    # -- the run's bracket ---------------------------------------------------------------------
    def start(self) -> None:
        """The run's id, the resource record `bisector cleanup` replays, the watches."""
        run_id = run_id_of(self.run_dir)
        self.watch = RunWatch(self.api, run_selector(run_id), self.clock)
        self.watch.start()
        if self.watch.failing_for() > 0:
            self.watch.stop()
            raise InfraError(f"the Kubernetes API does not answer: {self.watch.last_error}")
        # Before any Job is created; removed once `stop` found none left.
        self.run_id = run_id
        ResourceRecord(self.run_dir).add(self._resource())

    def _resource(self) -> Resource:
        cfg = self.cfg
        cmd = [sys.executable, "-m", "bisector.executors.kubernetes.sweep",
               "--namespace", cfg.namespace, "--run", self.run_id,
               "--wait", str(int(cfg.delete_wait))]  # fmt: skip
        if cfg.in_cluster:
            cmd.append("--in-cluster")
        if cfg.kubeconfig:
            cmd += ["--kubeconfig", str(Path(cfg.kubeconfig).expanduser().absolute())]
        if cfg.context:
            cmd += ["--context", cfg.context]
        return Resource(
            f"kubernetes/{cfg.namespace}/{self.run_id}",
            "kubernetes",
            f"the run's Jobs and pods in namespace {cfg.namespace} ({run_selector(self.run_id)})",
            (Step(tuple(cmd), timeout=cfg.delete_wait + 120),),
        )

    def stop(self) -> None:
        """Every Job and pod of the run deleted; the record removed once none is left."""
        if self.watch is not None:
            self.watch.stop()
        if not self.run_id:
            return
        try:
            left = sweep(self.api, self.run_id, self.cfg.delete_wait, say=self.say)
        except _api_errors() as exc:
            left = [f"everything (the API failed: {said(exc)})"]
        if left:
            why = (
                f"TEARDOWN FAILED: the run's Jobs and pods in namespace {self.cfg.namespace} "
                f"are not all gone ({', '.join(left)}): bisector cleanup --run-dir {self.run_dir}"
            )
            self.say(why)
            raise InfraError(why)
        ResourceRecord(self.run_dir).remove(self._resource().id)

    # -- a killed run's evaluations --------------------------------------------------------------
    def left_by_a_crash(self, candidate: Candidate) -> str | None:
        seen = self._job_of_evaluation(candidate.eval_dir.name)
        if seen is None or seen.gone or faults.condition(seen.obj, "Failed") is not None:
            return None  # nothing to adopt: the teardown deletes what there is
        name = name_of(seen.obj)
        if faults.condition(seen.obj, "Complete") is not None:
            return f"its Job {name} finished: its record is read when the commit is asked again"
        return f"its Job {name} still runs: adopted when the commit is asked again"

    def _job_of_evaluation(self, evaluation: str) -> Seen | None:
        if self.watch is None:
            return None
        for seen in self.watch.all_jobs():
            if (meta(seen.obj).labels or {}).get(LABEL_EVALUATION) == evaluation:
                return seen
        return None

    # -- one evaluation ----------------------------------------------------------------------
    def spec_for(self, candidate: Candidate, settings: EvaluationSettings) -> EvaluationSpec:
        return EvaluationSpec(
            commit=candidate.commit,
            tree=settings.tree,
            git_url=self.cfg.git_url,
            config=self._config,
            config_file=self.settings.config_file,
            fetch_depth=self.cfg.fetch_depth,
            revisions=self._revisions,
            phase=settings.phase,
            why=settings.why,
            name=candidate.eval_dir.name,
            launch_id=candidate.launch_id,
            launch_attempts=settings.launch_attempts,
            retry_wait_s=settings.retry_wait_s,
            window=WindowSpec.of(settings.window),
            early=None if settings.early is None else EarlySpec.of(settings.early),
            artifacts=self.cfg.artifacts,
        )

    def evaluate(
        self,
        backend: Backend,
        candidate: Candidate,
        settings: EvaluationSettings,
        hooks: EvaluationHooks,
    ) -> Measurement:
        """One evaluation as a Job; its teardown (the Job deleted) before it returns."""
        if self.watch is None:
            raise InfraError("the kubernetes executor was not started (setup did not run)")
        spec = self.spec_for(candidate, settings)
        began, started_at = self.clock(), time.time()
        self._take_a_place(hooks)
        m: Measurement | None = None
        attempted = False
        phases = _PodPhases(hooks)
        try:
            # The Job's wait for a node and its image, the pod's fetch and setup: all before
            # the build the pod says, and counted with it (below).
            phases.begins("build")
            try:
                attempted = True
                job = self._adopt(spec, candidate) or self._create(spec, candidate)
                m = self._follow(job, spec, candidate, hooks, phases)
            except _api_errors() as exc:  # the API failed: a skip, never a verdict
                m = self._skip(spec, candidate, f"the Kubernetes API failed: {said(exc)}")
            except handback.HandbackError as exc:
                m = self._skip(spec, candidate, exc.reason)
        finally:
            torn_down = not attempted
            if attempted:
                phases.begins("teardown")  # unless the pod said it: its Job's deletion continues it
                try:
                    backend.teardown(candidate)  # the Job deleted, its pod first
                    torn_down = True
                except InfraError as exc:
                    if m is not None:
                        _teardown_failed(m, exc.reason)
                    else:
                        self.say(f"TEARDOWN FAILED for {candidate.commit[:12]}: {exc.reason}")
            if self.at_once is not None:
                self.at_once.release()
            if torn_down:
                hooks.nothing_up()
        assert m is not None  # (every path without an exception made one)
        m.started_at = started_at
        m.slot = candidate.slot
        m.why = settings.why
        m.duration_s = round(self.clock() - began, 3)
        if m.phase_s:
            # The Job's own time (a node for its pod, the image, the fetch) before the
            # evaluation in the pod began: the ETA counts it with the build, as it comes first.
            waited = m.duration_s - sum(m.phase_s.values())
            m.phase_s["build"] = round(m.phase_s.get("build", 0.0) + max(0.0, waited), 3)
        return m

    def _take_a_place(self, hooks: EvaluationHooks) -> None:
        """One of `parallelism` places, waiting for one (a cancelled run stops waiting)."""
        if self.at_once is None:
            return
        while not self.at_once.acquire(timeout=self.poll_s):
            hooks.between_looks()

    def _adopt(self, spec: EvaluationSpec, candidate: Candidate) -> str | None:
        """A Job of this run for the same commit and phase that no slot follows, running or
        complete (a killed driver's): followed instead of a new one."""
        assert self.watch is not None
        with self.lock:
            found: list[Seen] = []
            for seen in self.watch.all_jobs():
                labels = meta(seen.obj).labels or {}
                name = name_of(seen.obj)
                if (
                    seen.gone
                    or name in self.claimed
                    or meta(seen.obj).deletion_timestamp is not None
                    or labels.get(LABEL_COMMIT) != spec.commit
                    or labels.get(LABEL_PHASE) != spec.phase
                    or faults.condition(seen.obj, "Failed") is not None
                ):
                    continue
                found.append(seen)
            if not found:
                return None
            # A finished one first: its record is there already.
            found.sort(key=lambda s: faults.condition(s.obj, "Complete") is None)
            name = name_of(found[0].obj)
            self.claimed.add(name)
            self.job_of[candidate.eval_dir.name] = name
        self.say(f"{spec.commit[:12]}: adopting Job {name}, left by a killed run")
        return name

    def _create(self, spec: EvaluationSpec, candidate: Candidate) -> str:
        job = job_for(self.cfg, spec, self.run_id, candidate.eval_dir.name)
        name = name_of(job)
        with self.lock:
            self.claimed.add(name)
            self.job_of[candidate.eval_dir.name] = name
        try:
            created = self.api.create_job(job)
        except k.ApiException as exc:
            if exc.status != 409:  # AlreadyExists: this evaluation's own, followed
                raise
        else:
            name = name_of(created)
        return name

    def _follow(
        self,
        job: str,
        spec: EvaluationSpec,
        candidate: Candidate,
        hooks: EvaluationHooks,
        phases: _PodPhases,
    ) -> Measurement:
        """Until the Job's answer: its record, or a skip saying what happened to it. While
        its pod runs, the phases it says are the evaluation's (`_PodPhases`)."""
        assert self.watch is not None
        stuck: dict[tuple[str, str], float] = {}
        while True:
            hooks.between_looks()  # a cancelled run raises here: the teardown deletes the Job
            seen = self.watch.job(job)
            pods = self.watch.pods_of(job)
            if seen is None:  # not seen by the watch yet: just created
                state: faults.State = faults.Running()
            else:
                state = faults.judge(seen.obj, pods, seen.gone)
                if isinstance(state, faults.Fault):
                    state = self._settled(job, state)
            if isinstance(state, faults.Waiting):
                state = self._bounded(state, stuck)
            if isinstance(state, faults.Done):
                return self._receive(job, state.pod, spec, candidate)
            if isinstance(state, faults.Fault):
                return self._fault(job, state, spec, candidate)
            pod = _running(pods)
            if pod is not None and phases.due(pod, self.clock(), self.phase_look_s):
                phases.said(self._log_tail(pod))
            lost = self.watch.failing_for()
            if lost >= API_LOST_S:
                return self._skip(
                    spec,
                    candidate,
                    f"the Kubernetes API failed every call for {lost:.0f} s "
                    f"({self.watch.last_error}); Job {job} unknown",
                )
            self.watch.wait(self.poll_s)

    def _settled(self, job: str, fault: faults.Fault) -> faults.Fault:
        """The Job's failure can reach its watch before its pod's end reaches the pods'
        (two watches, no order between them): wait a little for the pod's end, so the
        skip says why the pod ended ("was evicted"), not how it last looked ("is Running").
        The outcome is a skip either way."""
        assert self.watch is not None
        deadline = self.clock() + POD_SETTLE_S
        while fault.pod and not faults.ended(self.watch.pods_of(job), fault.pod):
            if self.clock() >= deadline:
                break
            self.watch.wait(self.poll_s)
            seen = self.watch.job(job)
            if seen is not None:
                again = faults.judge(seen.obj, self.watch.pods_of(job), seen.gone)
                if isinstance(again, faults.Fault):
                    fault = again
        return fault

    def _log_tail(self, pod: str) -> str:
        """The end of a running pod's log; "" when the read fails: the phase is only shown,
        and the watches say what happens to the pod."""
        try:
            log = self.api.pod_log(
                pod, CONTAINER, tail_lines=PHASE_TAIL, timeout_s=PHASE_READ_TIMEOUT_S
            )
        except _api_errors():
            return ""
        return log or ""

    def _bounded(self, state: faults.Waiting, stuck: dict[tuple[str, str], float]) -> faults.State:
        since = stuck.setdefault((state.pod, state.kind), self.clock())
        bound = {
            "unschedulable": self.cfg.unschedulable_after,
            "setup": self.cfg.setup_failing_after,
        }.get(state.kind, self.cfg.pull_failing_after)
        waited = self.clock() - since
        if waited < bound:
            return faults.Running()
        what = {
            "unschedulable": "no node took it",
            "image": "its image cannot be had",
            "start": "its container cannot start",
            "setup": "it was never set up",
        }[state.kind]
        return faults.Fault(
            f"pod {state.pod}: {what} for {waited:.0f} s: {state.detail}", state.pod
        )

    def _receive(
        self, job: str, pod: str | None, spec: EvaluationSpec, candidate: Candidate
    ) -> Measurement:
        """The record the pod handed back, unpacked into the evaluation's directory."""
        what = f"pod {pod}" if pod else f"Job {job}"
        log = self.api.pod_log(pod, CONTAINER) if pod else None
        if log is not None:
            _keep_log(candidate.eval_dir, log)
        if self.cfg.artifacts == handback.POD_LOG:
            data = handback.from_log(log or "", what)
        else:
            seen = self.watch.job(job) if self.watch else None
            labels = (meta(seen.obj).labels or {}) if seen else {}
            name = labels.get(LABEL_EVALUATION, spec.name)
            data = handback.get_object(self.cfg.artifacts, name)
            if data is not None:
                handback.delete_object(self.cfg.artifacts, name)
        if data is None:
            tail = _tail(log)
            return self._skip(
                spec, candidate, f"{what} completed without handing back a record{tail}"
            )
        m, left = handback.receive(data, candidate.eval_dir, what)
        if m.commit != spec.commit:
            raise handback.HandbackError(
                f"{what} handed back a record of {m.commit[:12]}, not of {spec.commit[:12]}"
            )
        m.ran_on = self._where(job, pod)
        if left:
            self.say(f"{what}: left out of its log (too large): {', '.join(left)}")
        return m

    def _where(self, job: str, pod: str | None) -> str:
        node = ""
        if pod and self.watch is not None:
            for o in self.watch.pods_of(job):
                if o.name == pod and o.pod.spec is not None and o.pod.spec.node_name:
                    node = f" on node {o.pod.spec.node_name}"
        return f"Job {self.cfg.namespace}/{job}, pod {pod or '?'}{node}"

    def _fault(
        self, job: str, fault: faults.Fault, spec: EvaluationSpec, candidate: Candidate
    ) -> Measurement:
        reason = fault.reason
        if fault.pod:
            with contextlib.suppress(*_api_errors()):
                log = self.api.pod_log(fault.pod, CONTAINER)
                if log is not None:
                    _keep_log(candidate.eval_dir, log)
                    if fault.needs_log:
                        reason += _tail(log)
        m = self._skip(spec, candidate, reason)
        m.ran_on = self._where(job, fault.pod)
        return m

    def _skip(self, spec: EvaluationSpec, candidate: Candidate, reason: str) -> Measurement:
        m = Measurement(spec.commit, spec.tree, spec.phase, reason=f"{SKIP_KIND}: {reason}")
        m.skipped_at = SKIP_KIND
        m.eval_dir = str(candidate.eval_dir)
        return m

    # -- the slot's teardown ---------------------------------------------------------------------
    def delete_evaluation(self, candidate: Candidate) -> None:
        """Delete the Job of `candidate`'s evaluation and wait until it and its pod are
        gone; InfraError when they are still there after `delete_wait`."""
        evaluation = candidate.eval_dir.name
        with self.lock:
            names = {self.job_of.pop(evaluation, "")} - {""}
        if self.watch is not None:
            seen = self._job_of_evaluation(evaluation)
            if seen is not None:
                names.add(name_of(seen.obj))
        try:
            for name in sorted(names):
                self.api.delete_job(name, int(self.cfg.termination_grace))
            deadline = self.clock() + self.cfg.delete_wait
            for name in sorted(names):
                while self.api.read_job(name) is not None:
                    if self.clock() >= deadline:
                        raise InfraError(
                            f"Job {name} is still there {self.cfg.delete_wait:.0f} s after its "
                            "deletion"
                        )
                    time.sleep(min(self.poll_s, 1.0))
        except _api_errors() as exc:
            raise InfraError(f"cannot delete the Job of {evaluation}: {said(exc)}") from None


def _running(pods: list[faults.Observed]) -> str | None:
    """The pod of the Job that runs now (the newest, should there be two), if one does."""
    running = [o for o in pods if not o.gone and o.pod.status and o.pod.status.phase == "Running"]
    if not running:
        return None
    return max(running, key=lambda o: (str(meta(o.pod).creation_timestamp or ""), o.name)).name


class _PodPhases:
    """The phases of one evaluation as its slot's hooks hear them: the executor's own (the
    build from the Job's creation, the teardown), and between them those its pod says in
    its log (`bisector-evaluate: <phase>`, bisector.executors.pod), each once, in order, as
    they are read. A line that says no phase says nothing; so does a phase the pod said
    before (a tail read again), or one before it in PHASES' order."""

    def __init__(self, hooks: EvaluationHooks) -> None:
        self.hooks = hooks
        self.current: Phase | None = None
        self.pod = ""
        self.reached = -1  # the index in PHASES of the last phase `pod` said
        self.looked = -math.inf

    def begins(self, phase: Phase) -> None:
        if phase != self.current:
            self.current = phase
            self.hooks.phase_begins(phase)

    def due(self, pod: str, now: float, every_s: float) -> bool:
        """Whether `pod`'s log is to be read now: at most once every `every_s`."""
        if pod != self.pod:  # another pod (a replacement) says its phases from the start
            self.pod, self.reached, self.looked = pod, -1, -math.inf
        if now - self.looked < every_s:
            return False
        self.looked = now
        return True

    def said(self, log: str) -> None:
        """The phases the end of `pod`'s log says that it had not said yet."""
        for phase in phases_said(log):
            at = PHASES.index(phase)
            if at > self.reached:
                self.reached = at
                self.begins(phase)


def _keep_log(eval_dir: Path, log: str) -> None:
    """The pod's own output (without the handback's lines) beside the evaluation's files."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    lines = [line for line in log.splitlines() if not line.startswith(handback.MARK)]
    (eval_dir / "pod.log").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tail(log: str | None) -> str:
    if not log:
        return ""
    lines = [
        line for line in log.splitlines() if line.strip() and not line.startswith(handback.MARK)
    ]
    if not lines:
        return ""
    return "; the end of its log: " + " | ".join(lines[-5:])[-600:]


def _teardown_failed(m: Measurement, error: str) -> None:
    """As evaluate_candidate: a failed teardown makes the evaluation a skip."""
    if m.value is not None:
        m.metrics.setdefault("value_before_teardown_failed", m.value)
    m.value = None
    m.stopped_early = None
    m.early_verdict = None
    m.teardown_error = error
    if not m.reason:
        m.reason, m.skipped_at = f"teardown: {error}", "teardown"


class JobsBackend(ForwardingBackend):
    """The run's backend as the driving process holds it when the evaluations run as Jobs:
    its traits and capabilities are the backend's (the pod runs it); its setup starts the
    executor, its teardown deletes a slot's Job, its close everything of the run. Its
    steps never run here."""

    def __init__(self, inner: Backend, executor: KubernetesExecutor) -> None:
        super().__init__(inner)
        self.executor = executor

    def setup(self) -> None:
        self.executor.start()

    def close(self) -> None:
        self.executor.stop()

    def teardown(self, candidate: Candidate) -> None:
        self.executor.delete_evaluation(candidate)

    def _elsewhere(self, step: str) -> None:
        raise BisectorError(f"internal error: the {step} step runs in the Job's pod, not here")

    def build(self, candidate: Candidate) -> None:
        self._elsewhere("build")

    def launch(self, candidate: Candidate) -> None:
        self._elsewhere("launch")

    def warmup(self, candidate: Candidate) -> None:
        self._elsewhere("warmup")

    def collect(self, candidate: Candidate) -> list[Path]:
        self._elsewhere("collect")
        return []

    def plan(self, candidate: Candidate) -> list[str]:
        cfg = self.executor.cfg
        return [
            f"# a Job in namespace {cfg.namespace} (image {cfg.image}) runs `bisector evaluate`: "
            f"git fetch --depth {cfg.fetch_depth} {cfg.git_url} {candidate.commit[:12]}, then:",
            *self.inner.plan(candidate),
        ]
