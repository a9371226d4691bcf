"""The simulator's good/bad separation at a procs-sized cluster, beside real measurements.

Runs the built-in model (bisector.sim) with the trigger index on (good, like 1444d25 and
f93a270's parent) and off (bad, like f93a270 and 7043372) for each number of extra node
watchers, at the procs backend's settings (hollow nodes, status period, no NPD), and
prints the node PATCH 409s, the cacher's high-water mark and the ratio bad/good:

    PYTHONPATH=. python scripts/sim_scale.py --nodes 100 --status-period 1 \\
        --minutes 5 --watchers 0,500,1000,2000,5000,16000 [--seeds 3] [--per-watcher-us 1.6]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
from pathlib import Path

from bisector.sim import RunParams, SimProfile, simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--status-period", type=float, default=1.0, help="seconds")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--watchers", default="0,500,1000,2000,5000,16000")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--npd", action="store_true", help="a node-problem-detector too")
    parser.add_argument("--per-watcher-us", type=float, help="dispatch cost per watcher offered")
    parser.add_argument("--base-us", type=float, help="dispatch cost per event")
    args = parser.parse_args()
    base = SimProfile()
    if args.per_watcher_us is not None:
        base = dataclasses.replace(base, dispatch_per_watcher_us=args.per_watcher_us)
    if args.base_us is not None:
        base = dataclasses.replace(base, dispatch_base_us=args.base_us)
    print(
        f"sim: {args.nodes} hollow nodes, status every {args.status_period:g}s, "
        f"{args.minutes:g} min, {base.describe()}"
    )
    print("watchers | good 409s | bad 409s | bad/good | good hwm | bad hwm")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "kube-apiserver.log"
        for watchers in (int(w) for w in args.watchers.split(",")):
            row: dict[str, list[float]] = {"good": [], "bad": [], "ghwm": [], "bhwm": []}
            for seed in range(args.seeds):
                params = RunParams(
                    nodes=args.nodes,
                    duration_s=args.minutes * 60,
                    seed=seed,
                    ramp_s=10.0,
                    extra_watchers=watchers,
                    status_period_s=args.status_period,
                    npd=args.npd,
                )
                for name, indexed in (("good", True), ("bad", False)):
                    profile = dataclasses.replace(base, trigger_index=indexed)
                    summary = simulate(profile, params, log)
                    row[name].append(summary.conflicts)
                    row["ghwm" if indexed else "bhwm"].append(summary.hwm)
            good, bad = statistics.median(row["good"]), statistics.median(row["bad"])
            ratio = f"{bad / good:.1f}x" if good else ("-" if not bad else "inf")
            print(
                f"{watchers:8d} | {good:9g} | {bad:8g} | {ratio:>8} | "
                f"{statistics.median(row['ghwm']):8g} | {statistics.median(row['bhwm']):7g}"
            )


if __name__ == "__main__":
    main()
