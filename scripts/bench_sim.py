"""Benchmark the kubemark simulator at the issue's size: 5000 nodes, 30 simulated minutes.

Runs the healthy profile and the one without the trigger index, each writing its
kube-apiserver.log to a temporary directory, and prints wall time against the
60 s target (ratio <= 1.0 meets it) with the figures each run produced.

    PYTHONPATH=. python scripts/bench_sim.py [--nodes 5000] [--minutes 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bisector.sim import RunParams, SimProfile, simulate

TARGET_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the logs in this directory")
    args = parser.parse_args()
    params = RunParams(nodes=args.nodes, duration_s=args.minutes * 60, seed=args.seed)
    print(
        f"{args.nodes} nodes, {args.minutes:g} simulated minutes, log written; target {TARGET_S:g}s"
    )
    header = f"{'run':<10} {'wall s':>7} {'cpu s':>7} {'ratio':>6} {'lines':>10} {'MiB':>6} "
    header += (
        f"{'conflicts':>10} {'patches':>10} {'writes':>9} {'hwm':>4} {'sat@s':>6} {'lag s':>7}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, profile in (
            ("healthy", SimProfile()),
            ("no-index", SimProfile(trigger_index=False)),
        ):
            log = out_dir / f"{name}.log"
            wall0, cpu0 = time.perf_counter(), time.process_time()
            s = simulate(profile, params, log)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            size = log.stat().st_size / 2**20
            sat = f"{s.saturated_at_s:.0f}" if s.saturated_at_s is not None else "-"
            print(
                f"{name:<10} {wall:7.1f} {cpu:7.1f} {wall / TARGET_S:6.2f} {s.lines:10d} "
                f"{size:6.0f} "
                f"{s.conflicts:10d} {s.node_patches:10d} {s.node_writes:9d} {s.hwm:4d} {sat:>6} "
                f"{s.lag_last_s:7.1f}"
            )
            if not args.keep:
                log.unlink()


if __name__ == "__main__":
    main()
