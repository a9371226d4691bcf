"""The planted modern hunt as Kubernetes Jobs (`make real-jobs`) beside the same hunt in
one process (`make real-modern`): wall times side by side and their ratio.

    PYTHONPATH=. python scripts/bench_real_jobs.py --jobs RUN_DIR [--modern RUN_DIR]

RUN_DIR of `--jobs` is a finished `make real-jobs` run (JOBS_RUN: its report.json, and
the RUN_DIR-timing.json real_jobs.py writes beside it with the whole script's time).
`--modern` is a finished `make real-modern` run on the same machine, read the same way;
without it, the baseline is the figure recorded on this project's machine (real-modern
at 0964569: 26m05s for `bisector run`, 30m22s from cold caches), and the table says so.
A hunt takes half an hour, so neither is re-run here.

Printed per hunt: the culprit named and whether confirmed, the evaluations measured,
the Jobs at a time, `bisector run`'s wall time (the report's `eta.actual_s`), the
evaluation time summed over evaluations (its `cost.measured.cluster_s`), and the ratio
of wall times (jobs / modern: below 1 the Jobs hunt was faster).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

RECORDED_MODERN_S = 26 * 60 + 5.0  # `bisector run` of make real-modern, warm GOCACHE
RECORDED_MODERN_COLD_S = 30 * 60 + 22.0
RECORDED_AT = "0964569"


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


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def read_hunt(what: str, run_dir: Path) -> Hunt:
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    culprit = report.get("culprit") or {}
    measured = (report.get("cost") or {}).get("measured") or {}
    search = report.get("search") or {}
    wall = (report.get("eta") or {}).get("actual_s")
    if wall is None:
        raise SystemExit(f"{run_dir}/report.json has no eta.actual_s: is the run finished?")
    return Hunt(
        what=what,
        culprit=(culprit.get("commit") or "none")[:12],
        confirmed=bool(culprit.get("confirmed")),
        evaluations=int(measured.get("evaluations") or 0),
        parallel=int(search.get("parallel") or 1),
        wall_s=float(wall),
        evaluation_s=float(measured.get("cluster_s") or 0.0),
        source=f"{run_dir}/report.json",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=Path, required=True, help="a make real-jobs run dir")
    parser.add_argument("--modern", type=Path, help="a make real-modern run dir (same machine)")
    args = parser.parse_args(argv)
    try:
        jobs = read_hunt("real-jobs (Kubernetes Jobs)", args.jobs)
        modern = read_hunt("real-modern (one process)", args.modern) if args.modern else None
    except (OSError, ValueError) as exc:
        print(f"bench-real-jobs: cannot read a run: {exc}", file=sys.stderr)
        return 2
    rows = [jobs] + ([modern] if modern else [])
    print(f"{'hunt':30} {'culprit':13} {'conf':5} {'evals':>5} {'jobs':>4} "
          f"{'wall':>10} {'clusters':>10}")  # fmt: skip
    for h in rows:
        print(f"{h.what:30} {h.culprit:13} {'yes' if h.confirmed else 'NO':5} "
              f"{h.evaluations:>5} {h.parallel:>4} {minutes(h.wall_s):>10} "
              f"{minutes(h.evaluation_s):>10}")  # fmt: skip
    timing = args.jobs.parent / f"{args.jobs.name}-timing.json"
    if timing.is_file():
        whole = json.loads(timing.read_text(encoding="utf-8")).get("script_s")
        if whole is not None:
            print(f"real-jobs script (serving copy, doctor, hunt, checks): {minutes(whole)}")
    for h in rows:
        print(f"  {h.what}: {h.source}")
    baseline = modern.wall_s if modern else RECORDED_MODERN_S
    if modern is None:
        print(
            f"real-modern (one process): not re-run; the figure recorded on this machine at "
            f"{RECORDED_AT}: {minutes(RECORDED_MODERN_S)} for `bisector run` "
            f"({minutes(RECORDED_MODERN_COLD_S)} from cold caches)"
        )
    print(f"ratio real-jobs / real-modern wall time: {jobs.wall_s / baseline:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
