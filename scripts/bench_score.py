"""Benchmark `bisector score` against the seed's grep pipeline, side by side, in one run.

Generates a kubemark-5000 kube-apiserver log in the 2017 format (wrap.go request
lines of 5000 hollow kubelets: node GET + status PATCH every 10 s, a share of them
409, pod reads, events, leader election, 429s, 5xx lines with stack traces and
`logging error output`, cacher high-water marks; `--dispatch` adds the incident's
`AAA: dispatching event nr N` lines), then times

    plain: bisector score LOG --json vs grep "v1\\/nodes" LOG | grep PATCH | grep " 409 " | wc -l
    gzip:  bisector score LOG.gz --json vs zcat LOG.gz | grep ... | wc -l

and prints wall times, ratios (target <= 0.7 on the plain log, issue 29), CPU seconds
(user + system of the whole process tree: on a machine shared with other jobs, wall time
swings with the load, CPU time much less; both ratios are printed), the scorer's peak
memory (target <= 200 MiB: the largest sum over its process tree of PSS, i.e. pages
shared by forked workers counted once, sampled every 20 ms; the sum of RSS is printed
beside it) and checks its count equals the exact count the generator wrote. `--runs N`
repeats each comparison (the machine is shared: take the spread, not one figure);
`--before DIR` also times the scorer of another checkout (e.g. `git archive main
bisector | tar -x -C DIR`) in the same runs. Files go to a temp dir that is deleted
afterwards (`--log` reuses a given log).

    PYTHONPATH=. python scripts/bench_score.py [--size 1GiB] [--dispatch] [--no-gzip]
        [--runs 3] [--before DIR] [--log FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

NODES = 5000
UA_KUBELET = "kubelet/v1.7.0-beta.0.23+7043372d05510b (linux/amd64) kubernetes/7043372"
UA_CM = "kube-controller-manager/v1.7.0 (linux/amd64) kubernetes/7043372/leader-election"
GREP = r'grep "v1\/nodes" {f} | grep PATCH | grep " 409 " | wc -l'
ZGREP = r'zcat {f} | grep "v1\/nodes" | grep PATCH | grep " 409 " | wc -l'


@dataclass
class Generated:
    conflicts: int = 0
    writes: int = 0
    lines: int = 0


def _parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    raw = text.lower().removesuffix("ib").removesuffix("b")
    if raw and raw[-1] in units:
        return int(float(raw[:-1]) * units[raw[-1]])
    return int(raw)


def generate(path: Path, size: int, *, conflict_rate: float, dispatch: bool) -> Generated:
    """Write about `size` bytes of log; returns the exact counts written."""
    rng = random.Random(46851)
    gen = Generated()
    clock = 5 * 3600 + 51 * 60  # 05:51:00, cluster start as in the incident
    written = 0
    hwm = {"*api.Node": 0, "*api.Pod": 0}
    with path.open("wb", buffering=8 << 20) as out:
        while written < size:
            lines: list[str] = []
            for k in range(NODES // 10):  # one simulated second
                usec = k * 1_000_000 // (NODES // 10)
                h, rest = divmod(clock, 3600)
                head = f"I0602 {h:02d}:{rest // 60:02d}:{rest % 60:02d}.{usec:06d}       7 "
                node = f"hollow-node-{rng.randrange(NODES)}"
                lines.append(
                    f"{head}wrap.go:42] GET /api/v1/nodes/{node}?resourceVersion=0: "
                    f"({rng.randrange(200, 900)}.{k % 1000:03d}µs) 200 [[{UA_KUBELET}] "
                    f"10.240.{k % 250}.{k % 200}:{30000 + k}]"
                )
                status = 409 if rng.random() < conflict_rate else 200
                gen.conflicts += status == 409
                if status == 200:
                    gen.writes += 1
                    if dispatch and gen.writes % 100 == 0:
                        lines.append(
                            f"E{head[1:]}cacher.go:610] AAA: dispatching event nr {gen.writes}"
                        )
                lines.append(
                    f"{head}wrap.go:42] PATCH /api/v1/nodes/{node}/status: "
                    f"({rng.randrange(1, 9)}.{k:03d}ms) {status} [[{UA_KUBELET}] "
                    f"10.240.{k % 250}.{k % 200}:{30000 + k}]"
                )
                if k % 3 == 0:
                    lines.append(
                        f"{head}wrap.go:42] GET /api/v1/namespaces/kubemark/pods/"
                        f"{node}-x: (1.{k:03d}ms) 200 [[{UA_KUBELET}] 10.240.0.{k % 200}:40000]"
                    )
                if k % 5 == 0:
                    lines.append(
                        f"{head}wrap.go:42] POST /api/v1/namespaces/default/events: "
                        f"(2.{k:03d}ms) 201 [[{UA_KUBELET}] 10.240.0.{k % 200}:40001]"
                    )
                if k % 97 == 0:
                    lines.append(
                        f"{head}wrap.go:42] PUT /api/v1/namespaces/kube-system/endpoints/"
                        f"kube-controller-manager: (3.1ms) 200 [[{UA_CM}] 127.0.0.1:5000]"
                    )
                if k % 211 == 0:
                    lines.append(
                        f"{head}wrap.go:42] PATCH /api/v1/nodes/{node}/status: (1.2ms) 429 "
                        f"[[{UA_KUBELET}] 10.240.0.1:30001]"
                    )
            if clock % 60 == 0:  # a 5xx with its stack trace, quoting a node PATCH 409
                lines += [
                    f"{head}wrap.go:42] PATCH /api/v1/nodes/{node}/status: (30.0s) 504",
                    "goroutine 12345 [running]:",
                    "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/server/httplog.(*respLogger)"
                    ".recordStatus(0xc4, 0x1f8)",
                    f'logging error output: "{head}wrap.go:42] PATCH /api/v1/nodes/{node}/status:'
                    ' (1.0ms) 409 [[kubelet] 10.0.0.1:1]\\n"',
                    f" [[{UA_KUBELET}] 10.240.0.1:30002]",
                ]
            for kind, cap in (("*api.Node", 100), ("*api.Pod", 73)):
                if hwm[kind] < cap and rng.random() < 0.5:
                    hwm[kind] += 1
                    lines.append(
                        f"{head}cacher.go:566] cacher ({kind}): {hwm[kind]} objects queued "
                        "in incoming channel."
                    )
            blob = ("\n".join(lines) + "\n").encode()
            out.write(blob)
            written += len(blob)
            gen.lines += len(lines)
            clock += 1
    return gen


@dataclass
class Run:
    wall_s: float
    stdout: str
    peak_pss_kib: int = 0
    peak_rss_kib: int = 0
    cpu_s: float = 0.0  # user + system of the process and every descendant it waited for


def _tree(root: int) -> list[int]:
    """`root` and its descendants, from /proc (children of every thread)."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return pids


def _memory_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KiB; zeros once it has exited."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return pss, rss


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    cmd: list[str],
    env: dict[str, str] | None = None,
    *,
    sample: bool = False,
    cwd: str | None = None,
) -> Run:
    cpu_before = _children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd
    )
    peak_pss = peak_rss = 0
    if sample:
        while proc.poll() is None:
            sizes = [_memory_kib(pid) for pid in _tree(proc.pid)]
            peak_pss = max(peak_pss, sum(pss for pss, _ in sizes))
            peak_rss = max(peak_rss, sum(rss for _, rss in sizes))
            time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {err.strip()}")
    return Run(wall, out, peak_pss, peak_rss, _children_cpu_s() - cpu_before)


def score_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "bisector", "score", str(path), "--json"]


def _with_path(root: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": root}


def timed_scorer(path: Path, root: str) -> Run:
    """`bisector score` of the checkout at `root`. It runs in `root`: `python -m` puts the
    working directory first on sys.path, so from elsewhere (another checkout) it would
    import that directory's bisector whatever PYTHONPATH says."""
    return timed(score_cmd(path), _with_path(root), sample=True, cwd=root)


def scanner_of(root: str) -> str:
    """Which log scanner the checkout at `root` runs: its compiled pass only where the C
    extension was built in it (`pip install -e .`, or setup.py build_ext --inplace)."""
    probe = "from bisector.logs import glogscan; print(glogscan.available())"
    found = subprocess.run(
        [sys.executable, "-c", probe], env=_with_path(root), cwd=root, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if found.returncode:
        return "numpy (no compiled scanner in this checkout)"
    return "compiled" if found.stdout.strip() == "True" else "numpy (the C extension is not built)"


def compare(label: str, path: Path, pipeline: str, expected: int, args: argparse.Namespace) -> bool:
    size = path.stat().st_size / (1 << 30)
    print(f"[{label}] {path.name}: {size:.2f} GiB")
    ok = True
    here = str(Path(__file__).resolve().parent.parent)
    print(f"  score: {scanner_of(here)}")
    if args.before:
        print(f"  before ({args.before}): {scanner_of(args.before)}")
    ratios: dict[str, list[tuple[float, float]]] = {}  # name -> (wall, cpu) ratio per pair
    for k in range(args.runs):
        grep = timed(["bash", "-c", pipeline.format(f=path)])
        runs = {"score": timed_scorer(path, here)}
        if args.before:
            runs["before"] = timed_scorer(path, args.before)
        print(
            f"  run {k + 1}: grep pipeline {grep.wall_s:6.2f} s (cpu {grep.cpu_s:5.2f} s)"
            f"  count {int(grep.stdout):,}"
        )
        for name, run in runs.items():
            ratios.setdefault(name, []).append(
                (run.wall_s / grep.wall_s, run.cpu_s / max(grep.cpu_s, 1e-9))
            )
            metrics = json.loads(run.stdout)["metrics"]
            count = metrics["conflicts"]
            ok &= bool(count == expected)
            print(
                f"    {name:6s} {run.wall_s:6.2f} s  ratio {run.wall_s / grep.wall_s:5.2f}"
                f"  cpu {run.cpu_s:5.2f} s ratio {run.cpu_s / max(grep.cpu_s, 1e-9):5.2f}"
                f"  peak PSS {run.peak_pss_kib / 1024:4.0f} MiB (RSS sum"
                f" {run.peak_rss_kib / 1024:4.0f})  count {count:,} (exact {expected:,})"
                f"  node_writes {metrics['node_writes']:,}"
            )
    for name, pairs in ratios.items():  # each run against the grep run beside it
        walls, cpus = sorted(w for w, _ in pairs), sorted(c for _, c in pairs)
        print(
            f"  {name}: median of {len(pairs)} paired runs: wall ratio "
            f"{statistics.median(walls):.2f} ({walls[0]:.2f}-{walls[-1]:.2f}), cpu ratio "
            f"{statistics.median(cpus):.2f} ({cpus[0]:.2f}-{cpus[-1]:.2f})"
        )
    print("  targets: wall ratio <= 0.7 (plain log), peak <= 200 MiB")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1GiB", help="log size, e.g. 512MiB, 1GiB, 2GiB")
    parser.add_argument("--conflict-rate", type=float, default=0.05)
    parser.add_argument("--dispatch", action="store_true", help="add AAA dispatch lines")
    parser.add_argument("--no-gzip", action="store_true", help="skip the gzip comparison")
    parser.add_argument("--runs", type=int, default=1, help="repeat each comparison")
    parser.add_argument("--before", help="PYTHONPATH of another checkout to time alongside")
    parser.add_argument("--log", type=Path, help="use this 2017-format log (no generation)")
    args = parser.parse_args()
    size = _parse_size(args.size)
    if args.before and not (Path(args.before) / "bisector" / "__init__.py").is_file():
        raise SystemExit(f"--before {args.before}: no bisector/ package there")
    if args.before:
        args.before = str(Path(args.before).resolve())
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        if args.log:
            log, expected = args.log.resolve(), _exact_conflicts(args.log)
        else:
            log = Path(tmp) / "kube-apiserver.log"
            start = time.perf_counter()
            gen = generate(log, size, conflict_rate=args.conflict_rate, dispatch=args.dispatch)
            print(f"generated {gen.lines:,} lines in {time.perf_counter() - start:.0f} s")
            expected = gen.conflicts
        ok = compare("plain", log, GREP, expected, args)
        if not args.no_gzip:
            packed = Path(tmp) / "kube-apiserver.log-20170602.gz"
            subprocess.run(["bash", "-c", f"gzip -1 -c {log} > {packed}"], check=True)
            if not args.log:
                log.unlink()  # keep disk use at one copy
            ok = compare("gzip", packed, ZGREP, expected, args) and ok
    print("counts exact" if ok else "COUNT MISMATCH")
    return 0 if ok else 1


def _exact_conflicts(path: Path) -> int:
    """Node PATCH 409s of a log this script generated (its only 409s are on request lines)."""
    pattern = re.compile(rb"^I\d{4} [^\]]*\] PATCH /api/v1/nodes/[^ ]*: \([^)]*\) 409 ", re.M)
    total = 0
    with path.open("rb") as handle:
        while block := handle.read(64 << 20):
            block += handle.readline()
            total += len(pattern.findall(block))
    return total


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
