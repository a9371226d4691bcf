"""`kind`: kubemark inside a kind cluster built from the candidate, for recent Kubernetes.

Per candidate: the version check (`git describe`; kind's kubeadm templates need
roughly >= v1.15, configurable as `min_version`), then `kind build node-image`
and the kubemark image (`make WHAT=cmd/kubemark`, `make build` in
cluster/images/kubemark), both tagged by the tree id so a re-evaluation of the
same tree finds them in docker and skips the build. Launch creates the cluster
(apiserver at --v=3), loads the kubemark image, creates namespace `kubemark`
with the `kubeconfig` secret and the hollow-node Deployment; collect is
`kubectl logs` of the apiserver pod (and `peek`, the same into a separate
file, while the warmup runs); teardown is `kind delete cluster`.
The cluster has its own kubeconfig in the evaluation directory: the user's
~/.kube/config is never touched. Both kubeconfigs there are cluster-admin
credentials: the directory is 0700 and the file bisector writes is 0600.
"""

from __future__ import annotations

import logging
import math
import os
import string
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, BackendTraits, Candidate, sleep_steps
from bisector.backends.instrument import apply_patch, apply_steps, resolve_patch
from bisector.backends.kind import steps as ks
from bisector.backends.resources import Resource, ResourceRecord, cache_key
from bisector.backends.steps import (
    run_step,
    run_with_retries,
    start_with_retries,
    tail,
    tree_step,
)
from bisector.collected import CL2_REPORT_DIR, METRICS_AFTER, METRICS_BEFORE
from bisector.durations import format_duration
from bisector.errors import BuildError, CollectError, InfraError, LaunchError
from bisector.metrics.cl2 import measured_violations

log = logging.getLogger("bisector.kind")
DATA = Path(__file__).resolve().parents[2] / "data" / "kind"


class KindBackend:
    KEYS = ks.KEYS
    name = "kind"

    def __init__(
        self, context: BackendContext, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.context = context
        self.cfg = ks.KindSettings.from_section(context.section)
        self.sleep = sleep
        self.record = ResourceRecord(context.run_dir)
        where = f"{context.section.file}: instrument_patch"
        patch = self.cfg.instrument_patch
        self.patch = resolve_patch(patch, where) if patch else None
        self._tags: dict[str, str] = {}  # commit -> image tag

    def setup(self) -> None:
        """Nothing lasts across candidates: each evaluation has its own cluster."""

    def close(self) -> None:
        """Nothing lasts across candidates."""

    def build(self, candidate: Candidate) -> None:
        wt, commit = candidate.worktree, candidate.commit
        self._check_version(wt, commit)
        try:
            tree = run_step(tree_step(wt, commit, self.cfg.git_timeout)).stdout.strip()
        except proc.CommandError as exc:
            raise BuildError(f"cannot read the tree of {commit[:12]}: {tail(exc)}") from None
        if self.patch is not None:
            apply_patch(wt, self.patch, commit, self.cfg.git_timeout)
        key = cache_key(tree, self.patch.read_bytes() if self.patch else None)
        tag = "bisector-" + key.replace(tree, tree[:16])
        if self.cfg.arch != "amd64":  # images of another architecture are other images
            tag += f"-{self.cfg.arch}"
        self._tags[commit] = tag
        if self._cached(tag):
            return
        for s in ks.build_steps(self.cfg, wt, tag):
            try:
                run_step(s)
            except proc.CommandError as exc:
                raise BuildError(
                    f"`{s.cmd[0]} {s.cmd[1]}` failed for {commit[:12]}: {tail(exc)}"
                ) from None

    def launch(self, candidate: Candidate) -> None:
        slot, tag = candidate.slot, self._tag(candidate)
        files = ks.EvalFiles.under(candidate.eval_dir)
        self._write_cluster_config(files)
        delete = ks.delete(self.cfg, slot, files)
        self.record.add(
            Resource(ks.resource_id(self.cfg, slot), self.name,
                     f"kind cluster {ks.cluster(self.cfg, slot)}", (delete,))
        )  # fmt: skip
        try:
            start_with_retries(
                ks.create(self.cfg, slot, tag, files), delete, self.cfg.retry, self.sleep
            )
            internal = run_with_retries(
                ks.internal_kubeconfig(self.cfg, slot), self.cfg.retry, self.sleep
            )
            _write_private(files.hollow_kubeconfig, internal.stdout)
            self._write_manifest(files, tag, slot)
            for s in ks.hollow_steps(self.cfg, slot, tag, files):
                run_with_retries(s, self.cfg.retry, self.sleep)
            self._wait_for_ready_hollow_nodes(files)
            restarts = self._restarts(slot, files, LaunchError)
            files.restarts.write_text(str(restarts), encoding="utf-8")
        except proc.CommandError as exc:
            raise LaunchError(
                f"`{' '.join(exc.cmd[:3])}` failed ({exc.why}): {tail(exc)}"
            ) from None

    @property
    def traits(self) -> BackendTraits:
        # A workload's run is the warmup: its length is the workload's, not `[run] warmup`.
        return BackendTraits(waits_warmup=self.cfg.workload is None)

    def warmup(self, candidate: Candidate) -> None:
        self._snapshot(candidate, METRICS_BEFORE)
        if self.cfg.workload is not None:
            self._workload(candidate)
        else:
            self.sleep(self.context.warmup_s)

    def _workload(self, candidate: Candidate) -> None:
        """The workload to its end (the warmup's); a failure is a skip with its reason."""
        report = candidate.log_dir / CL2_REPORT_DIR
        report.mkdir(parents=True, exist_ok=True)
        files = ks.EvalFiles.under(candidate.eval_dir)
        try:
            run_step(ks.workload(self.cfg, files, candidate.worktree, report))
        except proc.CommandError as exc:
            if not measured_violations(exc, report):  # CL2 failing its own SLO checks
                raise CollectError(f"workload failed ({exc.why}): {tail(exc)}") from None

    def _snapshot(self, candidate: Candidate, name: str) -> None:
        """The apiserver's /metrics into the log dir as `name` (bisector/collected.py).
        Best effort: without it a prometheus metric is a skip, a log metric is unaffected."""
        files = ks.EvalFiles.under(candidate.eval_dir)
        path = candidate.log_dir / name
        path.unlink(missing_ok=True)  # never an earlier attempt's file
        try:
            out = run_step(ks.apiserver_metrics(self.cfg, files)).stdout
        except proc.CommandError as exc:
            log.warning("reading the apiserver's /metrics failed: %s", tail(exc))
            return
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(out, encoding="utf-8")

    def collect(self, candidate: Candidate) -> list[Path]:
        self._snapshot(candidate, METRICS_AFTER)
        files = ks.EvalFiles.under(candidate.eval_dir)
        try:
            out = run_with_retries(
                ks.apiserver_logs(self.cfg, candidate.slot, files), self.cfg.retry, self.sleep
            ).stdout
        except proc.CommandError as exc:
            raise CollectError(f"kubectl logs of the apiserver failed: {tail(exc)}") from None
        if not out.strip():
            raise CollectError("the apiserver pod's log is empty")
        restarts = self._restarts(candidate.slot, files, CollectError)
        recorded = files.restarts.read_text(encoding="utf-8") if files.restarts.is_file() else "0"
        before = ks.parse_restarts(recorded)
        if before is None:
            raise CollectError(f"{files.restarts} holds {recorded!r}, not a restart count")
        if restarts > before:
            raise CollectError(
                f"the apiserver restarted during the run ({before} -> {restarts} restarts): "
                "its log covers only the time since"
            )
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        path = candidate.log_dir / "kube-apiserver.log"
        path.write_text(out, encoding="utf-8")
        return [path]

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them;
        a workload runs whole (one step)."""
        self._snapshot(candidate, METRICS_BEFORE)
        if self.cfg.workload is not None:
            return self._workload_step(candidate)
        return sleep_steps(self.sleep, self.context.warmup_s, every_s)

    def _workload_step(self, candidate: Candidate) -> Iterator[float]:
        started = time.monotonic()
        self._workload(candidate)
        yield time.monotonic() - started

    def peek(self, candidate: Candidate) -> list[Path]:
        """The apiserver log so far, while the warmup runs, for an early verdict.

        One `kubectl logs` (no retries: the next peek is the retry) into
        `<eval_dir>/peek/kube-apiserver.log`, replaced atomically so a reader never
        sees half a file; the final log path is left to `collect`. Reading a pod's
        log does not disturb the cluster. [] when the log is still empty; a failed
        read is a CollectError.
        """
        files = ks.EvalFiles.under(candidate.eval_dir)
        try:
            out = run_step(ks.apiserver_logs(self.cfg, candidate.slot, files)).stdout
        except proc.CommandError as exc:
            raise CollectError(f"kubectl logs of the apiserver failed: {tail(exc)}") from None
        if not out.strip():
            return []
        files.peek_log.parent.mkdir(parents=True, exist_ok=True)
        partial = files.peek_log.with_name(files.peek_log.name + ".part")
        partial.write_text(out, encoding="utf-8")
        partial.replace(files.peek_log)
        return [files.peek_log]

    def teardown(self, candidate: Candidate) -> None:
        """`kind delete cluster`; a failure keeps the cluster in the resource record
        (for `bisector cleanup`) and raises, so the evaluation records it."""
        files = ks.EvalFiles.under(candidate.eval_dir)
        try:
            run_with_retries(ks.delete(self.cfg, candidate.slot, files), self.cfg.retry, self.sleep)
        except proc.CommandError as exc:
            log.warning("kind delete cluster failed (%s); run `bisector cleanup`", tail(exc))
            raise InfraError(
                f"kind delete cluster {ks.cluster(self.cfg, candidate.slot)} failed: {tail(exc)}; "
                "run `bisector cleanup`"
            ) from None
        self.record.remove(ks.resource_id(self.cfg, candidate.slot))

    def plan(self, candidate: Candidate) -> list[str]:
        cfg, wt, slot = self.cfg, candidate.worktree, candidate.slot
        files = ks.EvalFiles.under(candidate.eval_dir)
        tag = self._tags.get(candidate.commit, "bisector-<tree>")
        lines = [
            f"# version check: skip below v{cfg.min_version[0]}.{cfg.min_version[1]}",
            ks.describe(cfg, wt, candidate.commit).render(),
            "# build (skipped when both images of the tree exist in docker)",
            tree_step(wt, candidate.commit, cfg.git_timeout).render(),
        ]
        if self.patch is not None:
            lines += [s.render() for s in apply_steps(wt, self.patch, cfg.git_timeout)]
        lines += [s.render() for s in ks.build_steps(cfg, wt, tag)]
        lines += ["# launch", ks.create(cfg, slot, tag, files).render()]
        lines.append(ks.internal_kubeconfig(cfg, slot).render() + f" > {files.hollow_kubeconfig}")
        lines += [s.render() for s in ks.hollow_steps(cfg, slot, tag, files)]
        every, until = ks.NODES_POLL_S, cfg.hollow_ready_timeout
        lines.append(
            f"# until {cfg.hollow_nodes} hollow-node-* nodes are Ready (every "
            f"{format_duration(every)}, up to {format_duration(until)}):"
            f" {ks.get_nodes(cfg, files).render()}"
        )
        restarts = ks.apiserver_restarts(cfg, slot, files).render()
        lines.append(f"{restarts} > {files.restarts}")
        metrics = ks.apiserver_metrics(cfg, files).render()
        lines.append(f"{metrics} > {candidate.log_dir / METRICS_BEFORE}")
        if cfg.workload is not None:
            report = candidate.log_dir / CL2_REPORT_DIR
            lines.append("# warmup: the workload, to its end")
            lines.append(ks.workload(cfg, files, wt, report).render())
        else:
            lines.append(f"# warmup: wait {format_duration(self.context.warmup_s)}")
        peek = ks.apiserver_logs(cfg, slot, files).render()
        lines.append(f"# during the warmup, the log so far: {peek} > {files.peek_log}")
        log_file = candidate.log_dir / "kube-apiserver.log"
        lines += ["# collect", f"{metrics} > {candidate.log_dir / METRICS_AFTER}"]
        lines += [ks.apiserver_logs(cfg, slot, files).render() + f" > {log_file}"]
        lines += [
            "# more apiserver restarts than at launch: the log is cut short, a skip",
            restarts,
        ]
        lines += ["# teardown", ks.delete(cfg, slot, files).render()]
        return lines

    # -- helpers -------------------------------------------------------------
    def _check_version(self, worktree: Path, commit: str) -> None:
        need = "v{}.{}".format(*self.cfg.min_version)
        try:
            described = run_step(ks.describe(self.cfg, worktree, commit)).stdout.strip()
        except proc.CommandError as exc:
            raise BuildError(
                f"cannot tell the Kubernetes version of {commit[:12]} (git describe: {tail(exc)}); "
                f"kind needs >= {need}"
            ) from None
        version = ks.parse_version(described)
        if version is None:
            raise BuildError(f"{commit[:12]} describes as {described!r}, not a v* version")
        if version < self.cfg.min_version:
            raise BuildError(
                f"{commit[:12]} is Kubernetes {described}, too old for kind (needs >= {need}); "
                "use the gce backend for it"
            )

    def _wait_for_ready_hollow_nodes(self, files: ks.EvalFiles) -> None:
        """Until `hollow_nodes` hollow nodes are Ready, as start-kubemark.sh waits.

        Running pods are not registered nodes: a candidate whose hollow kubelets
        never register would be measured under less load than the others. Fewer
        than asked within `hollow_ready_timeout` is a LaunchError (a skip).
        """
        want = self.cfg.hollow_nodes
        polls = max(1, math.ceil(self.cfg.hollow_ready_timeout / ks.NODES_POLL_S))
        ready = 0
        for poll in range(polls + 1):
            out = run_with_retries(ks.get_nodes(self.cfg, files), self.cfg.retry, self.sleep)
            ready = ks.ready_hollow_nodes(out.stdout)
            if ready >= want:
                return
            if poll < polls:
                self.sleep(ks.NODES_POLL_S)
        raise LaunchError(
            f"only {ready} of {want} hollow nodes Ready after "
            f"{format_duration(self.cfg.hollow_ready_timeout)}"
        )

    def _restarts(self, slot: int, files: ks.EvalFiles, error: type[InfraError]) -> int:
        """The apiserver's restart count; what cannot be read raises `error`."""
        step = ks.apiserver_restarts(self.cfg, slot, files)
        try:
            out = run_with_retries(step, self.cfg.retry, self.sleep).stdout
        except proc.CommandError as exc:
            raise error(f"cannot read the apiserver pod's restart count: {tail(exc)}") from None
        count = ks.parse_restarts(out)
        if count is None:
            raise error(f"the apiserver pod's restart count reads {out.strip()!r}")
        return count

    def _cached(self, tag: str) -> bool:
        images = (ks.node_image(self.cfg, tag), ks.kubemark_image(self.cfg, tag))
        for image in images:
            if run_step(ks.image_exists(image, self.cfg.git_timeout), check=False).code != 0:
                return False
        return True

    def _tag(self, candidate: Candidate) -> str:
        try:
            return self._tags[candidate.commit]
        except KeyError:
            raise LaunchError(f"launch before build for {candidate.commit[:12]}") from None

    def _write_cluster_config(self, files: ks.EvalFiles) -> None:
        files.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        files.directory.chmod(0o700)  # mkdir's mode is masked by the umask
        if self.cfg.kind_config is not None:
            text = self.cfg.kind_config.read_text(encoding="utf-8")
        else:
            text = string.Template((DATA / "cluster.yaml").read_text(encoding="utf-8")).substitute(
                verbosity=self.cfg.api_server_verbosity,
                log_max_size=self.cfg.container_log_max_size,
            )
        files.kind_config.write_text(text, encoding="utf-8")

    def _write_manifest(self, files: ks.EvalFiles, tag: str, slot: int) -> None:
        template = string.Template((DATA / "hollow-node.yaml").read_text(encoding="utf-8"))
        text = template.safe_substitute(
            replicas=self.cfg.hollow_nodes,
            image=ks.kubemark_image(self.cfg, tag),
            node=f"{ks.cluster(self.cfg, slot)}-control-plane",
        )
        files.manifest.write_text(text, encoding="utf-8")


def _write_private(path: Path, text: str) -> None:
    """Write `text` readable by its owner only (0600), also when `path` existed before."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
