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
Exit 0 when both hunts named a culprit, confirmed; 1 otherwise (a make that failed: no
ratio, and the second hunt is not run); 2 bad input; 130 interrupted (Ctrl-C: the make
running gets it too and is waited for, so it tears its cluster down; no ratio).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
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


class MakeFailed(Exception):
    """A make target of the benchmark exited non-zero: what it measured is no figure."""


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def read_hunt(what: str, run_dir: Path, target_s: float | None = None) -> Hunt:
    """The hunt `run_dir/report.json` says; ValueError when it is not a finished run's."""
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    try:
        culprit = report.get("culprit") or {}
        measured = (report.get("cost") or {}).get("measured") or {}
        search = report.get("search") or {}
        wall = (report.get("eta") or {}).get("actual_s")
        if wall is None:
            raise ValueError(f"{run_dir}/report.json has no eta.actual_s: is the run finished?")
        hunt = Hunt(
            what=what,
            culprit=str(culprit.get("commit") or "none")[:12],
            confirmed=bool(culprit.get("confirmed")),
            evaluations=int(measured.get("evaluations") or 0),
            parallel=int(search.get("parallel") or 1),
            wall_s=float(wall),
            evaluation_s=float(measured.get("cluster_s") or 0.0),
            source=f"{run_dir}/report.json",
            target_s=target_s,
        )
    except (AttributeError, TypeError) as exc:  # a list, a string where a table belongs
        raise ValueError(f"{run_dir}/report.json is not a bisector report: {exc}") from None
    # A ratio of a wall time that is none (0, negative, NaN, inf) would be printed as measured.
    if not (math.isfinite(hunt.wall_s) and hunt.wall_s > 0):
        raise ValueError(f"{run_dir}/report.json: eta.actual_s {wall!r} is not a wall time")
    if not (math.isfinite(hunt.evaluation_s) and hunt.evaluation_s >= 0):
        raise ValueError(f"{run_dir}/report.json: cost.measured.cluster_s is not a time")
    return hunt


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
    """Run one make target from its empty caches; its wall time in seconds. MakeFailed
    when it exits non-zero. On Ctrl-C the make (which the terminal interrupted too) is
    interrupted and waited for: it tears down the cluster it brought up; never killed."""
    target.log.parent.mkdir(parents=True, exist_ok=True)
    for value in target.env.values():
        Path(value).mkdir(parents=True, exist_ok=True)
    print(f"bench-real-jobs: make {' '.join(target.make_args)} (log {target.log})", flush=True)
    began = time.monotonic()
    with target.log.open("w", encoding="utf-8") as log:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "-C", str(ROOT), *target.make_args],
            env={**os.environ, **target.env}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            code = make.wait()
        except KeyboardInterrupt:
            # Sent to this process alone (kill -INT), the make would not know: tell it.
            make.send_signal(signal.SIGINT)
            said = f"waiting for make {target.make_args[0]} to stop (it tears down what it made)"
            print(f"bench-real-jobs: interrupted: {said}", file=sys.stderr, flush=True)
            make.wait()
            raise
    took = time.monotonic() - began
    print(f"bench-real-jobs: {target.what}: make exited {code} after {minutes(took)}", flush=True)
    if code != 0:
        raise MakeFailed(
            f"make {target.make_args[0]} exited {code} after {minutes(took)} (its log: "
            f"{target.log}): no ratio, its figures are no measurement"
        )
    return took


def print_table(jobs: Hunt, modern: Hunt, timing: Path | None) -> None:
    print(f"{'hunt':30} {'culprit':13} {'conf':5} {'evals':>5} {'jobs':>4} "
          f"{'bisector run':>12} {'clusters':>10} {'make target':>11}")  # fmt: skip
    for h in (jobs, modern):
        whole = minutes(h.target_s) if h.target_s is not None else "-"
        print(f"{h.what:30} {h.culprit:13} {'yes' if h.confirmed else 'NO':5} "
              f"{h.evaluations:>5} {h.parallel:>4} {minutes(h.wall_s):>12} "
              f"{minutes(h.evaluation_s):>10} {whole:>11}")  # fmt: skip
    script_s = _script_s(timing)
    if script_s is not None:
        print(f"real-jobs script (serving copy, doctor, hunt, checks): {minutes(script_s)}")
    for h in (jobs, modern):
        print(f"  {h.what}: {h.source}")
    print(f"ratio real-jobs / real-modern, bisector run: {jobs.wall_s / modern.wall_s:.2f}")
    if jobs.target_s is not None and modern.target_s is not None:
        print(f"ratio real-jobs / real-modern, make target: {jobs.target_s / modern.target_s:.2f}")


def _script_s(timing: Path | None) -> float | None:
    """real_jobs.py's whole wall time from its timing file; None when it has none readable."""
    if timing is None or not timing.is_file():
        return None
    try:
        whole = json.loads(timing.read_text(encoding="utf-8")).get("script_s")
        return None if whole is None else float(whole)
    except (OSError, ValueError, AttributeError, TypeError):
        return None


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
    if args.parallel < 1:
        print(f"bench-real-jobs: --parallel {args.parallel}: at least 1 Job at a time",
              file=sys.stderr)  # fmt: skip
        return 2
    if running and args.work.exists() and not args.work.is_dir():
        print(f"bench-real-jobs: {args.work} is not a directory", file=sys.stderr)
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
    except MakeFailed as exc:
        print(f"bench-real-jobs: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench-real-jobs: interrupted: no ratio", file=sys.stderr)
        return 130
    except (OSError, ValueError) as exc:
        print(f"bench-real-jobs: cannot read a run: {exc}", file=sys.stderr)
        return 2
    print_table(jobs, modern, timing)
    return 0 if jobs.confirmed and modern.confirmed else 1


if __name__ == "__main__":
    sys.exit(main())
