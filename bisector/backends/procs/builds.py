"""The builds of one run: each candidate's kube-apiserver (and `[backends.procs]
components`), built from its tree with the Go it needs (bisector.backends.procs.build),
cached by tree id; builds ahead run niced while a cluster is measured.

`apiserver_steps` is the build as data: `Builds.apiserver` runs those steps and `plan`
prints them, so the dry run shows the very commands a build runs. The toolchain, tree id,
fixes in range and cache key are shared with the harness's build (bisector.backends.procs.
harness).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.base import Candidate
from bisector.backends.procs import build as pb
from bisector.backends.procs.options import BuildFix, ProcsSettings
from bisector.backends.resources import BuildCache
from bisector.backends.steps import Step, run_step, tail, tree_step
from bisector.errors import BuildError

APISERVER = "kube-apiserver"


@dataclass(frozen=True)
class Built:
    """A kube-apiserver for a candidate, and the commit its /version reports: the
    candidate's own, or (from the cache, keyed by tree) the first commit built with the
    candidate's tree: the same code, stamped with another name."""

    binary: Path
    stamped: str
    components: tuple[tuple[str, Path], ...] = ()  # [backends.procs] components, built alike


@dataclass(frozen=True)
class BuildStep:
    """One command of a build, what to call it in an error, and the file it must leave."""

    step: Step
    what: str
    output: Path | None = None


def apiserver_steps(
    cfg: ProcsSettings,
    place: pb.BuildPlace,
    fixes: list[BuildFix] | tuple[BuildFix, ...],
    commit: str,
    *,
    nice: int = 0,
    mark: str = "",
) -> list[BuildStep]:
    """The build fixes, then `go build` of kube-apiserver and each component, into the
    tree's OUTPUT_DIR; at CPU priority `nice` (a build ahead) marked with `mark`."""
    found = [
        BuildStep(
            pb.nice(pb.fix_step(fix, place, cfg.build_timeout), nice, mark), f"build fix {fix.name}"
        )
        for fix in fixes
    ]
    for name in (APISERVER, *cfg.components):
        output = place.tree / pb.OUTPUT_DIR / name
        build = pb.go_build_step(
            place, f"cmd/{name}", output, commit, cfg.build_timeout, static=True
        )
        found.append(BuildStep(pb.nice(build, nice, mark), f"go build ./cmd/{name}", output))
    return found


class Builds:
    """The run's builds and what they share: `go version` per Go, the build cache."""

    def __init__(self, cfg: ProcsSettings, work: Path, mark: str) -> None:
        self.cfg = cfg
        self.work = work  # the run's procs directory: GOPATHs, logs of builds ahead
        self.mark = mark  # this run's builds ahead (build.ahead_mark), no other's
        self.cache = BuildCache(cfg.build_cache_dir)
        self._built: dict[str, Built] = {}  # commit -> its kube-apiserver
        self._prefetched: set[str] = set()
        self._go_versions: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- a candidate's build -------------------------------------------------------------
    def build(self, candidate: Candidate) -> None:
        try:
            built, fixes = self.apiserver(candidate.commit, candidate.worktree, nice=0)
            pb.write_fixes_applied(candidate.eval_dir, fixes)
        except OSError as exc:
            raise BuildError(f"cannot write the build's files: {exc}") from None
        with self._lock:
            self._built[candidate.commit] = built

    def prefetch(self, commit: str, worktree: Path) -> None:
        """Build `commit` into the cache while a cluster runs, at a low CPU priority."""
        try:
            # Its commands and their times go to a log of its own: no evaluation's build.log
            # is open while it runs, and its build time is a figure the user wants.
            log = self.prefetch_log(commit)
            log.parent.mkdir(parents=True, exist_ok=True)
            self.apiserver(commit, worktree, nice=self.cfg.prefetch_nice, log=log)
        except OSError as exc:
            raise BuildError(f"cannot write the build's files: {exc}") from None
        with self._lock:
            self._prefetched.add(commit)

    def prefetched(self, commit: str) -> bool:
        with self._lock:
            return commit in self._prefetched

    def prefetch_log(self, commit: str) -> Path:
        return self.work / "prefetch-logs" / f"{commit[:12]}-build.log"

    def built(self, commit: str) -> Built | None:
        """The kube-apiserver `build` made (or found) for `commit`, if it ran."""
        with self._lock:
            return self._built.get(commit)

    def apiserver(
        self, commit: str, worktree: Path, *, nice: int, log: Path | None = None
    ) -> tuple[Built, list[BuildFix]]:
        cfg = self.cfg
        tree = self.tree(worktree, commit)
        needs = pb.go_needs(worktree)
        tool = self.toolchain(needs)
        fixes = self.fixes_for(worktree)
        # Keys of builds without components stay what they were.
        key = self.key(tree, tool, fixes, ",".join(cfg.components))
        found = self._cached(key, commit=None)
        if found is not None:
            return found, fixes
        place = self.place(tool, worktree, needs)
        pb.link_gopath(place)
        for s in apiserver_steps(cfg, place, fixes, commit, nice=nice, mark=self.mark):
            pb.run_build_step(s.step, s.what, commit, log)
            if s.output is not None and not s.output.is_file():
                raise BuildError(f"go build left no {s.output} for {commit[:12]}")
        pb.write_stamp(worktree / pb.OUTPUT_DIR / APISERVER, commit)
        binary = f"{pb.OUTPUT_DIR}/{APISERVER}"
        kept = [binary, f"{binary}.commit", *(f"{pb.OUTPUT_DIR}/{n}" for n in cfg.components)]
        self.cache.store(key, worktree, kept)
        stored = self._cached(key, commit=commit)
        if stored is None:
            raise BuildError(f"the build cache {self.cache.root} did not keep {key}")
        return stored, fixes

    def _cached(self, key: str, *, commit: str | None) -> Built | None:
        """The cache's entry for `key` with every binary and the apiserver's stamp (the
        stamp `commit` when given), or None."""
        found = pb.cached_binary(self.cache, key, APISERVER)
        stamped = pb.read_stamp(found) if found is not None else None
        others = [(n, pb.cached_binary(self.cache, key, n)) for n in self.cfg.components]
        if found is None or stamped is None or not all(b for _, b in others):
            return None
        if commit is not None and stamped != commit:
            return None
        return Built(found, stamped, tuple((n, b) for n, b in others if b))

    # -- shared with the harness's build -------------------------------------------------
    def go_version(self, go: str) -> str:
        with self._lock:
            known = self._go_versions.get(go)
        if known is None:
            known = run_step(pb.version_step(go)).stdout
            with self._lock:
                self._go_versions[go] = known
        return known

    def toolchain(self, needs: pb.GoNeeds) -> pb.Toolchain:
        return pb.choose_toolchain(self.cfg, needs, self.go_version)

    def place(self, tool: pb.Toolchain, worktree: Path, needs: pb.GoNeeds) -> pb.BuildPlace:
        return pb.build_place(
            self.cfg, tool, worktree, self.gopath(worktree), vendored=needs.vendored
        )

    def gopath(self, worktree: Path) -> Path:
        return self.work / "gopath" / worktree.name

    def tree(self, worktree: Path, commit: str) -> str:
        try:
            return run_step(tree_step(worktree, commit, self.cfg.git_timeout)).stdout.strip()
        except proc.CommandError as exc:
            raise BuildError(f"cannot read the tree of {commit[:12]}: {tail(exc)}") from None

    def fixes_for(self, worktree: Path) -> list[BuildFix]:
        """The build fixes whose range holds the tree (git merge-base --is-ancestor)."""
        contains = self._contains(worktree)
        return [f for f in self.cfg.build_fixes if pb.fix_applies(f, contains)]

    def _contains(self, worktree: Path) -> Callable[[str], bool]:
        def contains(commit: str) -> bool:
            s = pb.ancestor_step(worktree, commit, self.cfg.git_timeout)
            code = run_step(s, check=False).code
            if code not in (0, 1):
                raise BuildError(
                    f"cannot tell whether the tree contains {commit[:12]} (a build fix's "
                    "range): is that commit in this repository?"
                )
            return code == 0

        return contains

    def key(self, tree: str, tool: pb.Toolchain, fixes: list[BuildFix], extra: str = "") -> str:
        """The cache key: the tree, and everything else that made the binary."""
        blob = "\0".join([pb.RECIPE, tool.version, extra, *(f.fingerprint() for f in fixes)])
        return f"{tree}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"
