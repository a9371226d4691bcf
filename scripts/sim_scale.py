"""The simulator's good/bad separation at a procs-sized cluster, beside real measurements.

Runs the built-in model (bisector.sim) with the trigger index on (good, like 1444d25 and
f93a270's parent) and off (bad, like f93a270 and 7043372) for each number of extra node
watchers, at the procs backend's settings (bisector/sim/calibration.py: hollow nodes,
status period, no NPD, the machine's node lookups and dispatch slowdown), and prints the
node PATCH 409s (median over seeds) and the good builds' successful status PATCHes, with
the bad builds at the quiet and the busy machine's slowdown, as a markdown table.
Real runs are read from `procs_measure.py --json` files named `scale-<watchers>.json`
(`--real DIR`), each run's "conflicts" by its "expect" (good/bad), and given one by one
(`--real-point WATCHERS:good|bad:409S`, e.g. a hunt's figures):

    PYTHONPATH=. python scripts/sim_scale.py --nodes 100 --status-period 1 \\
        --minutes 5 --watchers 0,2000,5000,16000 [--seeds 3] [--real /work/scratch/real] \\
        [--real-point 16000:good:2 --real-point 16000:bad:7834 ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
from pathlib import Path

from bisector.sim import SimProfile, simulate
from bisector.sim.calibration import PROCS_BUSY_SLOWDOWN, PROCS_QUIET_SLOWDOWN, procs_params

_SCALE_FILE = re.compile(r"^scale-(\d+)\.json$")


def read_real(directory: Path) -> dict[int, dict[str, list[int]]]:
    """watchers -> {"good": [409s...], "bad": [...]} from the scale-W.json files there."""
    out: dict[int, dict[str, list[int]]] = {}
    for path in sorted(directory.glob("scale-*.json")):
        match = _SCALE_FILE.match(path.name)
        if not match:
            continue
        try:
            targets = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"skipping {path}: {exc}")
            continue
        row = out.setdefault(int(match.group(1)), {"good": [], "bad": []})
        for target in targets:
            expect = target.get("expect")
            for run in target.get("runs", []):
                if expect in row and run.get("conflicts") is not None:
                    row[expect].append(int(run["conflicts"]))
    return out


def _median(values: list[int]) -> str:
    if not values:
        return "-"
    shown = f"{statistics.median(values):g}"
    return shown if len(values) == 1 else f"{shown} ({min(values)}-{max(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--status-period", type=float, default=1.0, help="seconds")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--watchers", default="0,2000,5000,16000")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--real", type=Path, help="a directory of scale-<watchers>.json")
    parser.add_argument(
        "--real-point", action="append", default=[], help="WATCHERS:good|bad:409S (repeat)"
    )
    parser.add_argument("--per-watcher-us", type=float, help="dispatch cost per watcher offered")
    parser.add_argument("--base-us", type=float, help="dispatch cost per event")
    args = parser.parse_args()
    base = SimProfile()
    if args.per_watcher_us is not None:
        base = dataclasses.replace(base, dispatch_per_watcher_us=args.per_watcher_us)
    if args.base_us is not None:
        base = dataclasses.replace(base, dispatch_base_us=args.base_us)
    real = read_real(args.real) if args.real else {}
    for point in args.real_point:
        try:
            watchers_text, expect, value = point.split(":")
            if expect not in ("good", "bad"):
                raise ValueError(expect)
            row = real.setdefault(int(watchers_text), {"good": [], "bad": []})
            row[expect].append(int(value))
        except ValueError:
            parser.error(f"--real-point {point!r}: write WATCHERS:good:409S or WATCHERS:bad:409S")
    print(
        f"sim: {args.nodes} hollow nodes, status every {args.status_period:g}s, "
        f"{args.minutes:g} min, {args.seeds} seeds, {base.describe()}; dispatch slowdown "
        f"{PROCS_QUIET_SLOWDOWN:g} (quiet) / {PROCS_BUSY_SLOWDOWN:g} (busy)\n"
    )
    print(
        "| watchers | real good 409s | real bad 409s | sim good 409s | sim bad 409s, quiet "
        "| sim bad 409s, busy | sim good status 200s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for watchers in (int(w) for w in args.watchers.split(",")):
        sims: dict[str, list[int]] = {"good": [], "quiet": [], "busy": [], "writes": []}
        for seed in range(args.seeds):
            for name, indexed, slowdown in (
                ("good", True, PROCS_BUSY_SLOWDOWN),
                ("quiet", False, PROCS_QUIET_SLOWDOWN),
                ("busy", False, PROCS_BUSY_SLOWDOWN),
            ):
                params = procs_params(
                    watchers,
                    nodes=args.nodes,
                    minutes=args.minutes,
                    status_period_s=args.status_period,
                    seed=seed,
                    slowdown=slowdown,
                )
                profile = dataclasses.replace(base, trigger_index=indexed)
                summary = simulate(profile, params, Path(os.devnull))
                sims[name].append(summary.conflicts)
                if name == "good":
                    sims["writes"].append(summary.status_updates)
        points = real.get(watchers, {"good": [], "bad": []})
        print(
            f"| {watchers:,} | {_median(points['good'])} | {_median(points['bad'])} | "
            f"{_median(sims['good'])} | {_median(sims['quiet'])} | {_median(sims['busy'])} | "
            f"{_median(sims['writes'])} |"
        )


if __name__ == "__main__":
    main()
