"""The planted modern hunt as Kubernetes Jobs (`make real-jobs`) beside the same hunt in
one process (`make real-modern`): wall times side by side and their ratio.

    PYTHONPATH=. python scripts/bench_real_jobs.py --kube TREE --work DIR [--parallel 2]
    PYTHONPATH=. python scripts/bench_real_jobs.py --jobs RUN_DIR --modern RUN_DIR

With `--kube`, both hunts run here, one after the other, each from empty caches: DIR must
be new or empty; real-jobs gets DIR/jobs/cache as the pods' build caches (JOBS_CACHE), and
real-modern DIR/modern/xdg as XDG_CACHE_HOME (so it also installs its Go and etcd, which
the pods find in the image). What both share is outside the hunts: the tree, the image
and the cluster's own binaries (built before by `make image` and `make jobs-cluster`, or
by the first real-jobs). Each make's output goes to DIR/<hunt>/make.log. An hour or more
on 2 cores.

With `--jobs` and `--modern`, two finished runs are read instead (a make real-jobs run dir,
JOBS_RUN, with the RUN_DIR-timing.json real_jobs.py writes beside it; a make real-modern
run dir, MODERN_RUN), made on the same machine.

Printed per hunt: the culprit named and whether confirmed, the evaluations measured, the
Jobs at a time, `bisector run`'s wall time (the report's `eta.actual_s`), the evaluation
time summed over evaluations (its `cost.measured.cluster_s`), the whole make target's wall
time when it ran here; then the ratios jobs / modern (below 1 the Jobs hunt was faster).
Exit 0 when both hunts named a culprit, confirmed; 1 otherwise; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Hunt:
    what: str
    culprit: str
    confirmed: bool
    evaluations: int
    parallel: int
    wall_s: float
    evaluation_s: float
    source: str
    target_s: float | None = None  # the whole make target, when this script ran it


@dataclass(frozen=True)
class Target:
    """One make target of the benchmark, with the caches it starts from."""

    what: str
    make_args: tuple[str, ...]
    env: dict[str, str]
    run_dir: Path
    log: Path


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def read_hunt(what: str, run_dir: Path, target_s: float | None = None) -> Hunt:
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    culprit = report.get("culprit") or {}
    measured = (report.get("cost") or {}).get("measured") or {}
    search = report.get("search") or {}
    wall = (report.get("eta") or {}).get("actual_s")
    if wall is None:
        raise ValueError(f"{run_dir}/report.json has no eta.actual_s: is the run finished?")
    return Hunt(
        what=what,
        culprit=(culprit.get("commit") or "none")[:12],
        confirmed=bool(culprit.get("confirmed")),
        evaluations=int(measured.get("evaluations") or 0),
        parallel=int(search.get("parallel") or 1),
        wall_s=float(wall),
        evaluation_s=float(measured.get("cluster_s") or 0.0),
        source=f"{run_dir}/report.json",
        target_s=target_s,
    )


def targets(kube: Path, work: Path, parallel: int) -> tuple[Target, Target]:
    """real-jobs and real-modern, each with caches of its own under `work` (empty)."""
    jobs, modern = work / "jobs", work / "modern"
    return (
        Target(
            what="real-jobs (Kubernetes Jobs)",
            make_args=(
                "real-jobs",
                f"KUBE={kube}",
                f"JOBS_RUN={jobs / 'run'}",
                f"JOBS_RUN_CLUSTER_DIR={jobs / 'cluster'}",
                f"JOBS_CACHE={jobs / 'cache'}",
                f"JOBS_PARALLEL={parallel}",
            ),
            env={},
            run_dir=jobs / "run",
            log=jobs / "make.log",
        ),
        Target(
            what="real-modern (one process)",
            make_args=("real-modern", f"KUBE={kube}", f"MODERN_RUN={modern / 'run'}"),
            env={"XDG_CACHE_HOME": str(modern / "xdg")},
            run_dir=modern / "run",
            log=modern / "make.log",
        ),
    )


def run_target(target: Target) -> float:
    """Run one make target from its empty caches; its wall time in seconds."""
    target.log.parent.mkdir(parents=True, exist_ok=True)
    for value in target.env.values():
        Path(value).mkdir(parents=True, exist_ok=True)
    print(f"bench-real-jobs: make {' '.join(target.make_args)} (log {target.log})", flush=True)
    began = time.monotonic()
    with target.log.open("w", encoding="utf-8") as log:
        code = subprocess.run(
            ["make", "--no-print-directory", "-C", str(ROOT), *target.make_args],
            env={**os.environ, **target.env}, stdout=log, stderr=subprocess.STDOUT, check=False,
        ).returncode  # fmt: skip
    took = time.monotonic() - began
    print(f"bench-real-jobs: {target.what}: make exited {code} after {minutes(took)}", flush=True)
    return took


def print_table(jobs: Hunt, modern: Hunt, timing: Path | None) -> None:
    print(f"{'hunt':30} {'culprit':13} {'conf':5} {'evals':>5} {'jobs':>4} "
          f"{'bisector run':>12} {'clusters':>10} {'make target':>11}")  # fmt: skip
    for h in (jobs, modern):
        whole = minutes(h.target_s) if h.target_s is not None else "-"
        print(f"{h.what:30} {h.culprit:13} {'yes' if h.confirmed else 'NO':5} "
              f"{h.evaluations:>5} {h.parallel:>4} {minutes(h.wall_s):>12} "
              f"{minutes(h.evaluation_s):>10} {whole:>11}")  # fmt: skip
    if timing is not None and timing.is_file():
        whole = json.loads(timing.read_text(encoding="utf-8")).get("script_s")
        if whole is not None:
            print(f"real-jobs script (serving copy, doctor, hunt, checks): {minutes(whole)}")
    for h in (jobs, modern):
        print(f"  {h.what}: {h.source}")
    print(f"ratio real-jobs / real-modern, bisector run: {jobs.wall_s / modern.wall_s:.2f}")
    if jobs.target_s is not None and modern.target_s is not None:
        print(f"ratio real-jobs / real-modern, make target: {jobs.target_s / modern.target_s:.2f}")


def timing_of(run_dir: Path) -> Path:
    return run_dir.parent / f"{run_dir.name}-timing.json"


def run_both(kube: Path, work: Path, parallel: int) -> tuple[Hunt, Hunt]:
    jobs_target, modern_target = targets(kube.resolve(), work.resolve(), parallel)
    jobs_s = run_target(jobs_target)
    modern_s = run_target(modern_target)
    return (
        read_hunt(jobs_target.what, jobs_target.run_dir, jobs_s),
        read_hunt(modern_target.what, modern_target.run_dir, modern_s),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kube", type=Path, help="a v1.32 tree: run both hunts here")
    parser.add_argument("--work", type=Path, help="a new or empty directory for both hunts")
    parser.add_argument("--parallel", type=int, default=2, help="Jobs at a time (real-jobs)")
    parser.add_argument("--jobs", type=Path, help="a finished make real-jobs run dir")
    parser.add_argument("--modern", type=Path, help="a finished make real-modern run dir")
    args = parser.parse_args(argv)
    running = args.kube is not None
    if (
        running == bool(args.jobs or args.modern)
        or (running and args.work is None)
        or (not running and not (args.jobs and args.modern))
    ):
        print("bench-real-jobs: give --kube TREE --work DIR (run both), or --jobs RUN "
              "--modern RUN (read both)", file=sys.stderr)  # fmt: skip
        return 2
    if running and args.work.exists() and any(args.work.iterdir()):
        print(f"bench-real-jobs: {args.work} is not empty: both hunts start from empty caches "
              "there; give a new directory", file=sys.stderr)  # fmt: skip
        return 2
    try:
        if running:
            jobs, modern = run_both(args.kube, args.work, args.parallel)
            timing = timing_of(args.work.resolve() / "jobs" / "run")
        else:
            jobs = read_hunt("real-jobs (Kubernetes Jobs)", args.jobs)
            modern = read_hunt("real-modern (one process)", args.modern)
            timing = timing_of(args.jobs)
    except (OSError, ValueError) as exc:
        print(f"bench-real-jobs: cannot read a run: {exc}", file=sys.stderr)
        return 2
    print_table(jobs, modern, timing)
    return 0 if jobs.confirmed and modern.confirmed else 1


if __name__ == "__main__":
    sys.exit(main())
