"""`gce`: kubemark on Google Compute Engine, driven by the candidate's own scripts.

Per bisection: a base cluster (`cluster/kube-up.sh`, real VMs that host the
hollow-node pods) per parallel slot, brought up once and kept across
candidates; taken down in `close()` (`cluster/kube-down.sh`) unless
`keep_base_cluster = true`. The base cluster's scripts and release come from
`base_checkout`, or, when unset, from the worktree of the run's good endpoint
(`BackendContext.base_worktree`, set by the run setup): the base only hosts pods,
so a known-good build is the safest choice and its version does not change the
measurement.

Per candidate: `make quick-release` (cached by tree id), then
`test/kubemark/start-kubemark.sh` with the 2017 CI job's env, the warmup, a
`gcloud compute scp` of `/var/log/kube-apiserver.log*` from
`${INSTANCE_PREFIX}-kubemark-master`, and `test/kubemark/stop-kubemark.sh`.
As kubetest did, start/stop get NUM_NODES/MASTER_SIZE set to the kubemark
values (older kubemark configs read those, newer ones read KUBEMARK_*; both
are set).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bisector import proc
from bisector.backends.base import BackendContext, BackendTraits, Candidate, sleep_steps
from bisector.backends.gce import adapt as gce_adapt
from bisector.backends.gce import preflight as gce_preflight
from bisector.backends.gce import steps as gce_steps
from bisector.backends.instrument import apply_patch, apply_steps, resolve_patch
from bisector.backends.resources import BuildCache, Resource, ResourceRecord, cache_key
from bisector.backends.steps import (
    Step,
    is_transient,
    run_step,
    run_with_retries,
    start_with_retries,
    tail,
    tree_step,
)
from bisector.collected import METRICS_AFTER, METRICS_BEFORE
from bisector.durations import format_duration
from bisector.errors import BuildError, CollectError, ConfigError, InfraError, LaunchError
from bisector.report.adaptation import Adaptation
from bisector.signals import held_during

log = logging.getLogger("bisector.gce")

# What `make quick-release` of 2017 leaves that the scripts use (kubernetes 7043372 and
# 1444d25): cluster/common.sh `find-release-tars` wants the server and salt tars, and
# the manifests tar for gci masters/nodes (the kubemark master is gci), under
# _output/release-tars; kubemark is a test target (hack/lib/golang.sh
# server_test_targets), so it is not in the server tar: start-kubemark.sh finds it
# with `kube::util::find-binary-for-platform kubemark linux/amd64`, i.e. in
# _output/dockerized/bin/linux/amd64 after a dockerized build
# (build/release.sh `kube::build::copy_output`). cluster/kubectl.sh finds kubectl there.
BIN_DIR = "_output/dockerized/bin/linux/amd64"
SERVER_TARBALL = "_output/release-tars/kubernetes-server-linux-amd64.tar.gz"
RELEASE_OUTPUTS = (
    SERVER_TARBALL,
    "_output/release-tars/kubernetes-salt.tar.gz",
    "_output/release-tars/kubernetes-manifests.tar.gz",
    f"{BIN_DIR}/kubemark",
    f"{BIN_DIR}/kubectl",
)
CACHED_OUTPUTS = RELEASE_OUTPUTS  # the rest of the build (e2e.test, the stage tree) is not needed


class GceBackend:
    KEYS = gce_steps.KEYS
    name = "gce"
    traits = BackendTraits()

    def __init__(
        self, context: BackendContext, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.context = context
        self.cfg = gce_steps.GceSettings.from_section(context.section, context.run_dir)
        self.sleep = sleep
        self.record = ResourceRecord(context.run_dir)
        self.cache = BuildCache(self.cfg.build_cache_dir)
        self.patch = (
            resolve_patch(self.cfg.instrument_patch, f"{context.section.file}: instrument_patch")
            if self.cfg.instrument_patch
            else None
        )
        self._bases: dict[int, Path] = {}  # slot -> checkout whose scripts brought it up
        self._adapted: set[int] = set()  # slots whose adaptations ran (for the report)

    # -- bisection bracket ---------------------------------------------------
    def setup(self) -> None:
        if self.cfg.placeholder_project:
            raise ConfigError(
                f"{self.context.section.file}: project = {self.cfg.project!r} is the example's "
                "placeholder; set `project` in [backends.gce] to your GCP project"
            )
        self._ensure_base(0)

    def close(self) -> None:
        if self.cfg.keep_base_cluster:
            return
        for slot, checkout in sorted(self._bases.items()):
            down = gce_steps.kube_down(self.cfg, checkout, slot)
            try:
                run_with_retries(down, self.cfg.retry, self.sleep)
            except proc.CommandError as exc:
                log.warning("kube-down.sh failed (%s); run `bisector cleanup`", tail(exc))
                continue
            left = self._sweep(gce_steps.base_fallback(self.cfg, slot))
            if left:
                log.warning(
                    "kube-down.sh failed to delete everything (%s); run `bisector cleanup`", left[0]
                )
                continue
            self.record.remove(gce_steps.base_id(self.cfg, slot))
        self._bases.clear()

    def adaptations(self) -> list[Adaptation]:
        """What the backend did beyond the 2017 scripts (gce_adapt), for the report."""
        if not self._adapted:
            return []
        return gce_adapt.adaptations(self.cfg, sorted(self._adapted))

    # -- one evaluation ------------------------------------------------------
    def build(self, candidate: Candidate) -> None:
        self._build_tree(candidate.worktree, candidate.commit, self.patch)

    def launch(self, candidate: Candidate) -> None:
        self._ensure_base(candidate.slot)
        start = gce_steps.start_kubemark(self.cfg, candidate.worktree, candidate.slot)
        stop = gce_steps.stop_kubemark(self.cfg, candidate.worktree, candidate.slot)
        self.record.add(
            Resource(
                gce_steps.kubemark_id(self.cfg, candidate.slot),
                self.name,
                f"kubemark master {gce_steps.master_name(self.cfg, candidate.slot)}",
                (stop,),
                tuple(gce_steps.kubemark_fallback(self.cfg, candidate.slot)),
            )
        )
        try:
            self._start(start, stop, "start-kubemark.sh")
        finally:
            _private(gce_steps.kubemark_kubeconfig(candidate.worktree))

    def warmup(self, candidate: Candidate) -> None:
        self._snapshot(candidate, METRICS_BEFORE)
        self.sleep(self.context.warmup_s)

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        """The warmup in steps, so the run can read the log so far (`peek`) between them."""
        self._snapshot(candidate, METRICS_BEFORE)
        return sleep_steps(self.sleep, self.context.warmup_s, every_s)

    def _snapshot(self, candidate: Candidate, name: str) -> None:
        """The master apiserver's /metrics into the log dir as `name` (bisector/collected.py).
        Best effort: without it a prometheus metric is a skip, a log metric is unaffected."""
        path = candidate.log_dir / name
        path.unlink(missing_ok=True)  # never an earlier attempt's file
        try:
            out = run_step(gce_steps.apiserver_metrics(self.cfg, candidate.slot)).stdout
        except proc.CommandError as exc:
            log.warning("reading the apiserver's /metrics failed: %s", tail(exc))
            return
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(out, encoding="utf-8")

    def peek(self, candidate: Candidate) -> list[Path]:
        """The apiserver log so far: one `gcloud compute scp` of the current file from the
        kubemark master into `<eval>/peek/` (never the final log's place), no retries."""
        where = candidate.eval_dir / "peek"
        where.mkdir(parents=True, exist_ok=True)
        try:
            run_step(gce_steps.scp_current_log(self.cfg, candidate.slot, where))
        except proc.CommandError as exc:
            raise CollectError(f"reading the log so far failed: {tail(exc)}") from None
        log = where / "kube-apiserver.log"
        return [log] if log.is_file() and log.stat().st_size else []

    def collect(self, candidate: Candidate) -> list[Path]:
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        self._snapshot(candidate, METRICS_AFTER)
        scp = gce_steps.scp_logs(self.cfg, candidate.slot, candidate.log_dir)
        try:
            run_with_retries(scp, self.cfg.retry, self.sleep)
        except proc.CommandError as exc:
            raise CollectError(
                f"gcloud compute scp of the apiserver log failed: {tail(exc)}"
            ) from None
        logs = sorted(candidate.log_dir.glob("kube-apiserver.log*"))
        if not logs:
            raise CollectError(f"no kube-apiserver.log* arrived in {candidate.log_dir}")
        return logs

    def teardown(self, candidate: Candidate) -> None:
        """stop-kubemark.sh, then its deletes again one by one: the 2017 script ignores a
        delete that fails (`|| true`: a rate limit would leave a 64-vCPU master billing), so
        each is checked gone ("was not found") before the record goes. A failure keeps the
        record (for `bisector cleanup`) and raises, so the evaluation records it."""
        stop = gce_steps.stop_kubemark(self.cfg, candidate.worktree, candidate.slot)
        try:
            run_with_retries(stop, self.cfg.retry, self.sleep)
        except proc.CommandError as exc:
            log.warning("stop-kubemark.sh failed (%s); run `bisector cleanup`", tail(exc))
            raise InfraError(
                f"stop-kubemark.sh failed: {tail(exc)}; run `bisector cleanup`"
            ) from None
        left = self._sweep(gce_steps.kubemark_fallback(self.cfg, candidate.slot))
        if left:
            log.warning(
                "stop-kubemark.sh failed to delete everything (%s); run `bisector cleanup`",
                left[0],
            )
            raise InfraError(
                f"stop-kubemark.sh left the kubemark master up: {left[0]}; run `bisector cleanup`"
            )
        self.record.remove(gce_steps.kubemark_id(self.cfg, candidate.slot))

    def _sweep(self, deletes: list[Step]) -> list[str]:
        """Each delete again (retried when transient); what is not gone afterwards."""
        left = []
        for delete in deletes:
            try:
                run_with_retries(delete, self.cfg.retry, self.sleep)
            except proc.CommandError as exc:
                if "not found" in f"{exc.stderr}\n{exc.stdout}".lower():
                    continue  # gone: deleted by the script
                left.append(f"{shlex.join(delete.cmd[:5])}: {tail(exc)}")
        return left

    def plan(self, candidate: Candidate) -> list[str]:
        cfg, wt, slot = self.cfg, candidate.worktree, candidate.slot
        lines = [f"# build (skipped when tree is cached in {cfg.build_cache_dir})"]
        lines.append(tree_step(wt, candidate.commit, cfg.git_timeout).render())
        if self.patch is not None:
            lines += [s.render() for s in apply_steps(wt, self.patch, cfg.git_timeout)]
        lines.append(gce_steps.quick_release(cfg, wt).render())
        base = self._base_checkout_or_none()
        lines.append(f"# base cluster, once per bisection and slot {slot} (setup)")
        if base is None:
            lines.append("# (base_checkout unset: the run's good-endpoint worktree)")
            base = Path("<good-endpoint-worktree>")
        lines.append("# preflight (read-only): quotas, network, registry, images, policies, cfssl;")
        lines.append("# a shortfall stops the run here, before anything is created")
        lines += [
            s.render()
            for s in gce_preflight.steps(
                cfg, gce_steps.network(cfg, slot), gce_steps.registry(slot),
                gce_adapt.registry_location(slot), cfg.env.get("PATH"),
            )
        ]  # fmt: skip
        lines.append(
            "# adaptations to 2026 GCP (docs/gce-2026.md), each when what it makes is missing:"
        )
        for adaptation in gce_adapt.adaptations(cfg, [slot]):
            lines.append(f"#   {adaptation.name}: {adaptation.why}")
            lines += [c for c in adaptation.commands if not c.startswith("PATH=")]
            if adaptation.name == "master console":
                lines[-1] = "#   (on failure) " + lines[-1]
        lines.append(gce_steps.kube_up(cfg, base, slot, gce_adapt.kube_up_path(cfg)).render())
        lines.append("# launch")
        lines.append(gce_steps.start_kubemark(cfg, wt, slot).render())
        metrics = gce_steps.apiserver_metrics(cfg, slot).render()
        lines += [f"# the apiserver's /metrics into {candidate.log_dir / METRICS_BEFORE}", metrics]
        lines.append(f"# warmup: wait {format_duration(self.context.warmup_s)}")
        lines.append("# collect")
        lines += [f"# the apiserver's /metrics into {candidate.log_dir / METRICS_AFTER}", metrics]
        lines.append(gce_steps.scp_logs(cfg, slot, candidate.log_dir).render())
        lines.append("# teardown")
        lines.append(gce_steps.stop_kubemark(cfg, wt, slot).render())
        lines.append(
            "# then each delete of stop-kubemark.sh again, checked gone (it ignores failures)"
        )
        lines += [s.render() for s in gce_steps.kubemark_fallback(cfg, slot)]
        if cfg.keep_base_cluster:
            lines.append("# keep_base_cluster = true: the base cluster is left running")
        else:
            lines.append("# end of bisection (close)")
            lines.append(gce_steps.kube_down(cfg, base, slot).render())
            lines.append("# then each delete of kube-down.sh again, checked gone (set +e in it)")
            lines += [s.render() for s in gce_steps.base_fallback(cfg, slot)]
        return lines

    # -- helpers -------------------------------------------------------------
    def _build_tree(self, worktree: Path, commit: str, patch: Path | None) -> None:
        try:
            tree = run_step(tree_step(worktree, commit, self.cfg.git_timeout)).stdout.strip()
        except proc.CommandError as exc:
            raise BuildError(f"cannot read the tree of {commit[:12]}: {tail(exc)}") from None
        if patch is not None:
            apply_patch(worktree, patch, commit, self.cfg.git_timeout)
        key = cache_key(tree, patch.read_bytes() if patch is not None else None)
        if self.cache.has(key):
            self.cache.restore(key, worktree, CACHED_OUTPUTS)
            return
        try:
            run_step(gce_steps.quick_release(self.cfg, worktree))
        except proc.CommandError as exc:
            raise BuildError(
                f"make quick-release failed for {commit[:12]} ({exc.why}): {tail(exc)}"
            ) from None
        missing = [p for p in RELEASE_OUTPUTS if not (worktree / p).exists()]
        if missing:
            raise BuildError(f"make quick-release left no {missing[0]} for {commit[:12]}")
        self.cache.store(key, worktree, CACHED_OUTPUTS)

    def _base_checkout_or_none(self) -> Path | None:
        if self.cfg.base_checkout is not None:
            return self.cfg.base_checkout
        return self.context.base_worktree

    def _ensure_base(self, slot: int) -> None:
        if slot in self._bases:
            return
        checkout = self._base_checkout_or_none()
        if checkout is None:
            raise ConfigError(
                f"{self.context.section.file}: set `base_checkout` in [backends.gce] to a "
                "Kubernetes checkout whose cluster/kube-up.sh brings up the base cluster"
            )
        ready = self._preflight(slot)  # before a build of the base release, too
        if not (checkout / SERVER_TARBALL).is_file():
            try:
                head = run_step(
                    Step(("git", "rev-parse", "HEAD"), str(checkout), {}, self.cfg.git_timeout)
                ).stdout.strip()
                self._build_tree(checkout, head, None)
            except proc.CommandError as exc:
                raise LaunchError(f"base checkout {checkout}: {tail(exc)}") from None
            except BuildError as exc:
                raise LaunchError(f"base cluster release does not build: {exc.reason}") from None
        config = gce_steps.kubeconfig(self.cfg, slot)
        _create_private(config)
        gce_adapt.write_wrapper(self.cfg)
        up = gce_steps.kube_up(self.cfg, checkout, slot, gce_adapt.kube_up_path(self.cfg))
        down = gce_steps.kube_down(self.cfg, checkout, slot)
        resource_id = gce_steps.base_id(self.cfg, slot)
        what = f"base cluster {gce_steps.base_prefix(self.cfg, slot)} (kube-up.sh)"
        fallback = tuple(gce_steps.base_fallback(self.cfg, slot))
        self.record.add(Resource(resource_id, self.name, what, (down,), fallback))
        try:
            self._adapt(slot, ready)
            self._kube_up(up, down, slot)
            _private(config)
        except BaseException:
            # Failed, or interrupted (Ctrl-C, SIGTERM) mid kube-up: take the half-built base
            # down now, to its end whatever signal arrives, so nothing is left up and the
            # slot's next launch starts clean; if that fails too, the record keeps it for
            # `bisector cleanup`.
            with held_during("taking down the half-built base cluster"), proc.protected():
                if run_step(down, check=False).code == 0:
                    self.record.remove(resource_id)
            raise
        self._bases[slot] = checkout

    def _preflight(self, slot: int) -> gce_preflight.Ready:
        """The project's quotas, network, registry, images and policies, read before this
        slot creates anything; a known shortfall or a refusal refuses the run (one line
        each, with its fix), no answer from the project is an infrastructure failure
        (gce_preflight.refuse)."""
        ready = gce_preflight.check(
            self.cfg,
            gce_steps.network(self.cfg, slot),
            gce_steps.registry(slot),
            gce_adapt.registry_location(slot),
            path=self.cfg.env.get("PATH"),
        )
        for finding in ready.findings:
            if not finding.known:
                log.warning("preflight: %s %s", finding.what, finding.detail)
        gce_preflight.refuse(self.cfg.project, ready)
        return ready

    def _adapt(self, slot: int, ready: gce_preflight.Ready) -> None:
        """The 2017 scripts made to fit 2026 GCP (gce_adapt), before kube-up.sh runs."""
        self._adapted.add(slot)
        steps = []
        if not ready.network:
            steps.append(gce_adapt.network_create(self.cfg, slot))
        self._run_adaptations(steps)
        steps = []
        if not ready.repository:
            steps.append(gce_adapt.repository_create(self.cfg, slot))
        if not ready.bucket:
            steps.append(gce_adapt.bucket_create(self.cfg))
        self._run_adaptations(steps)

    def _ensure_network(self, slot: int) -> None:
        """The slot's auto-mode network, made again when it is missing."""
        found = run_step(gce_preflight.network_step(self.cfg, gce_steps.network(self.cfg, slot)),
                         check=False)  # fmt: skip
        if found.code != 0 and "was not found" in found.stderr:
            self._run_adaptations([gce_adapt.network_create(self.cfg, slot)])

    def _run_adaptations(self, steps: list[Step]) -> None:
        for adaptation in steps:
            try:
                run_with_retries(adaptation, self.cfg.retry, self.sleep)
            except proc.CommandError as exc:
                if "already exists" in f"{exc.stderr}{exc.stdout}".lower():
                    continue  # another slot, or a racing run, made it: it exists
                raise LaunchError(
                    f"{shlex.join(adaptation.cmd[:4])} failed ({exc.why}): {tail(exc)}"
                ) from None

    def _kube_up(self, up: Step, down: Step, slot: int) -> None:
        """kube-up.sh, retried (after kube-down.sh) when its failure is transient; each
        failure said for what it is (`_kube_up_failure`)."""
        attempts = max(1, self.cfg.retry.attempts)
        for attempt in range(1, attempts + 1):
            try:
                run_step(up)
                return
            except proc.CommandError as exc:
                reason, retryable = self._kube_up_failure(exc, slot)
                if not retryable or attempt == attempts:
                    raise LaunchError(reason) from None
                log.warning("%s; taking it down and trying again", reason)
                run_step(down, check=False)
                self.sleep(min(self.cfg.retry.initial_s * 2 ** (attempt - 1), self.cfg.retry.max_s))
                # kube-down.sh deleted the slot's network (KUBE_DELETE_NETWORK=true): the next
                # kube-up.sh would create it with --mode=auto again, which gcloud refuses.
                self._ensure_network(slot)

    def _kube_up_failure(self, exc: proc.CommandError, slot: int) -> tuple[str, bool]:
        """(the reason, whether a new attempt may pass) of a failed kube-up.sh.

        "Cluster failed to initialize" (check-cluster: the master did not answer within
        KUBE_CLUSTER_INITIALIZATION_TIMEOUT) is two different things: a master VM that runs
        but whose apiserver never started (its console is kept; the same master fails the
        same way: not retried), or a master that was never created, because kube-up.sh
        creates it in the background and goes on when that fails (then the create's own
        error decides, e.g. a rate limit or a stockout is retried)."""
        output = f"{exc.stdout}\n{exc.stderr}"
        if gce_adapt.GROUP_TIMEOUT in output:
            return (
                f"kube-up.sh: the base cluster's node group was not complete after "
                f"{format_duration(self.cfg.group_stable_timeout)} (quota or a zone without "
                f"capacity: {tail(exc)}); not retried"
            ), False
        if gce_adapt.CLUSTER_FAILED not in output:
            return f"kube-up.sh failed ({exc.why}): {tail(exc)}", is_transient(exc)
        console = gce_adapt.console_path(self.cfg, slot)
        read = run_step(gce_adapt.console_step(self.cfg, slot, console), check=False)
        if read.code != 0 and "not found" in read.stderr.lower():
            console.unlink(missing_ok=True)
            create = _gcloud_error(output, "gcloud.compute.instances.create")
            return (
                "kube-up.sh: the base cluster's master was never created ("
                f"{create or 'no error from its create in the output'}), and kube-up.sh waited "
                "for it until 'Cluster failed to initialize'"
            ), is_transient(exc)
        return (
            "kube-up.sh: the base cluster's master never answered (Cluster failed to initialize"
            " within KUBE_CLUSTER_INITIALIZATION_TIMEOUT): its VM runs but its apiserver did not"
            f" start; its serial console is in {console}. A 2017 master on today's GCE most "
            "often cannot fetch an image or file that is gone (docs/gce-2026.md); not retried"
        ), False

    def _start(self, start: Step, stop: Step, what: str) -> None:
        try:
            start_with_retries(start, stop, self.cfg.retry, self.sleep)
        except proc.CommandError as exc:
            raise LaunchError(f"{what} failed ({exc.why}): {tail(exc)}") from None


def _gcloud_error(output: str, command: str) -> str | None:
    """gcloud's error for `command` in a script's output, on one line."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if f"ERROR: ({command})" in line:
            said = [line.strip(), *(x.strip() for x in lines[i + 1 : i + 3] if x.startswith(" -"))]
            return " ".join(said)
    return None


def _create_private(path: Path) -> None:
    """An empty 0600 file in a 0700 directory, before kube-up.sh writes credentials to it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    path.chmod(0o600)


def _private(path: Path) -> None:
    """Credentials the scripts wrote with the default umask: owner only."""
    with contextlib.suppress(FileNotFoundError):
        path.chmod(0o600)
