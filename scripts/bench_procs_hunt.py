"""Where the real 2017 procs hunt's wall time goes: a phase table, and the ratio to 51 minutes.

Runs (or, with `--read`, reads) the issue's hunt

    bisector run --good 1444d25 --bad 7043372 --first-parent --config configs/procs-2017.toml

in a checkout of the 2017 history and prints, per evaluation, the time spent in each
phase as the evaluation measured it (the journal's `phase_s`: build, launch, warmup,
collect, teardown; a build made ahead while another cluster ran is marked `ahead` and
costs the evaluation nothing), its verdict and value; then the totals per phase and per
kind of evaluation (endpoints, search, confirmations), the run's wall time, and the
ratio to the baseline.

The baseline is the hunt measured on this project's machine on 1 December 2026 before
issue 29 (docs/procs.md, "The real hunt"; issue 29 item 6): 51m33s of wall time from
cold caches, 46m53s of it in evaluations (two endpoints 9m09s and 5m49s, nine search
runs 15.5 min, three full-length confirmations 17 min). A hunt takes most of an hour,
so the baseline is that recorded measurement, not re-run here; the table says so.

    PYTHONPATH=. python scripts/bench_procs_hunt.py --repo /work/kube [--run-dir DIR]
        [--cold DIR]        # fresh build cache and GOCACHE under DIR (a cold hunt)
    PYTHONPATH=. python scripts/bench_procs_hunt.py --read RUN_DIR   # a finished run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "procs-2017.toml"
GOOD, BAD, CULPRIT = "1444d25", "7043372", "f93a270"
PHASES = ("build", "launch", "warmup", "collect", "teardown")
# docs/procs.md "The real hunt" and issue 29 item 6 (1 December 2026, cold caches).
BASELINE_WALL_S = 51 * 60 + 33
BASELINE_EVALS_S = 46 * 60 + 53
BASELINE_KINDS = {"endpoint": 9 * 60 + 9 + 5 * 60 + 49, "bisect": 15.5 * 60, "confirm": 17 * 60}


@dataclass
class Row:
    n: int
    phase: str
    commit: str
    verdict: str
    value: float | None
    phase_s: dict[str, float]
    duration_s: float
    ahead: bool
    early: str | None

    @property
    def accounted_s(self) -> float:
        return sum(self.phase_s.values())


@dataclass
class Hunt:
    rows: list[Row] = field(default_factory=list)
    culprit: str = ""
    confirmed: bool | None = None
    wall_s: float | None = None


def _journal(run_dir: Path) -> Iterator[dict[str, object]]:
    with (run_dir / "journal.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_hunt(run_dir: Path) -> Hunt:
    hunt = Hunt()
    verdicts: dict[str, str] = {}
    for record in _journal(run_dir):
        if record.get("type") == "verdict":
            verdicts[str(record["commit"])] = str(record["verdict"])
    for record in _journal(run_dir):
        m = record.get("measurement")
        if record.get("type") != "measurement" or not isinstance(m, dict):
            continue
        value = m.get("value")
        verdict = m.get("early_verdict") or ("skip" if value is None else "")
        hunt.rows.append(
            Row(
                n=len(hunt.rows) + 1,
                phase=str(m.get("phase", "")),
                commit=str(m.get("commit", ""))[:12],
                verdict=str(verdict or verdicts.get(str(m.get("commit")), "")),
                value=float(value) if isinstance(value, (int, float)) else None,
                phase_s={k: float(v) for k, v in dict(m.get("phase_s") or {}).items()},
                duration_s=float(m.get("duration_s") or 0.0),
                ahead=bool(m.get("prefetched_build")),
                early=str(m["stopped_early"]) if m.get("stopped_early") else None,
            )
        )
    report = run_dir / "report.json"
    if report.exists():
        data = json.loads(report.read_text(encoding="utf-8"))
        culprit = data.get("culprit") or {}
        hunt.culprit = str(culprit.get("commit", ""))[:12]
        hunt.confirmed = culprit.get("confirmed")
    return hunt


def _mmss(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"


def print_table(hunt: Hunt) -> None:
    print(f"{'#':>2} {'phase':9} {'commit':12} {'value':>8} {'verdict':7} ", end="")
    print(" ".join(f"{p:>8}" for p in PHASES), f"{'eval':>8}")
    totals = dict.fromkeys(PHASES, 0.0)
    kinds: dict[str, float] = {}
    for row in hunt.rows:
        value = "-" if row.value is None else f"{row.value:,.0f}"
        cells = []
        for p in PHASES:
            s = row.phase_s.get(p, 0.0)
            totals[p] += s
            cells.append(f"{s:7.1f}" + ("a" if p == "build" and row.ahead else " "))
        kinds[row.phase] = kinds.get(row.phase, 0.0) + row.duration_s
        print(f"{row.n:>2} {row.phase:9} {row.commit:12} {value:>8} {row.verdict:7} ", end="")
        print(" ".join(cells), f"{_mmss(row.duration_s):>8}")
    print(f"{'':>2} {'total':9} {'':12} {'':>8} {'':7} ", end="")
    print(" ".join(f"{totals[p]:7.1f} " for p in PHASES), f"{_mmss(sum(kinds.values())):>8}")
    print("(seconds; 'a': the build was made ahead while another cluster ran)")
    print()
    print(f"{'evaluations':12} {'now':>9} {'baseline':>9} {'ratio':>6}")
    for kind in ("endpoint", "bisect", "confirm"):
        now, base = kinds.get(kind, 0.0), BASELINE_KINDS[kind]
        print(f"{kind:12} {_mmss(now):>9} {_mmss(base):>9} {now / base:6.2f}")
    evals = sum(kinds.values())
    ratio = evals / BASELINE_EVALS_S
    print(f"{'all':12} {_mmss(evals):>9} {_mmss(BASELINE_EVALS_S):>9} {ratio:6.2f}")
    if hunt.wall_s is not None:
        ratio = hunt.wall_s / BASELINE_WALL_S
        print(f"{'wall':12} {_mmss(hunt.wall_s):>9} {_mmss(BASELINE_WALL_S):>9} {ratio:6.2f}")
    print("(baseline: the hunt measured on 1 December 2026, docs/procs.md 'The real hunt')")
    print(f"culprit {hunt.culprit or '-'} confirmed {hunt.confirmed}; expected {CULPRIT}")


def run_hunt(repo: Path, run_dir: Path, cold: Path | None, extra: list[str]) -> float:
    config = CONFIG
    if cold is not None:
        # A cold hunt: the same config with a fresh build cache and GOCACHE; the harness
        # is built too (its cache entry lives in the build cache), before the first run.
        cold.mkdir(parents=True, exist_ok=True)
        text = CONFIG.read_text(encoding="utf-8").replace(
            "[backends.procs]\n",
            f'[backends.procs]\nbuild_cache_dir = "{cold}/builds"\ngocache = "{cold}/go-build"\n',
            1,
        )
        config = cold / "procs-2017-cold.toml"
        config.write_text(text, encoding="utf-8")
    bisector = Path(sys.executable).with_name("bisector")
    command = [
        str(bisector), "run", "--good", GOOD, "--bad", BAD, "--first-parent",
        "--config", str(config), "--repo", str(repo), "--run-dir", str(run_dir), "--fresh",
        *extra,
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, check=False, env=os.environ | {"NO_COLOR": "1"})
    wall = time.monotonic() - start
    print(f"exit {done.returncode} after {_mmss(wall)}", flush=True)
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="a checkout of the 2017 history")
    parser.add_argument("--run-dir", type=Path, help="default: a new directory under /tmp")
    parser.add_argument("--cold", type=Path, help="fresh build cache and GOCACHE here")
    parser.add_argument("--read", type=Path, help="print the table of a finished run")
    parser.add_argument("extra", nargs="*", help="more `bisector run` arguments (after --)")
    args = parser.parse_args()
    if args.read is not None:
        print_table(read_hunt(args.read))
        return 0
    if args.repo is None:
        parser.error("--repo (a checkout of the 2017 history) or --read RUN_DIR")
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="bench-procs-hunt-"))
    wall = run_hunt(args.repo, run_dir, args.cold, args.extra)
    hunt = read_hunt(run_dir)
    hunt.wall_s = wall
    print_table(hunt)
    return 0 if hunt.culprit and CULPRIT.startswith(hunt.culprit[:7]) else 1


if __name__ == "__main__":
    sys.exit(main())
