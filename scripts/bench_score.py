"""Benchmark `bisector score` against the seed's grep pipeline, side by side, in one run.

Generates a kubemark-5000 kube-apiserver log in the 2017 format (wrap.go request
lines of 5000 hollow kubelets: node GET + status PATCH every 10 s, a share of them
409, pod reads, events, leader election, 429s, 5xx lines with stack traces and
`logging error output`, cacher high-water marks; `--dispatch` adds the incident's
`AAA: dispatching event nr N` lines), then times

    plain: bisector score LOG --json vs grep "v1\\/nodes" LOG | grep PATCH | grep " 409 " | wc -l
    gzip:  bisector score LOG.gz --json vs zcat LOG.gz | grep ... | wc -l

and prints wall times, ratios (target <= 1.0), the scorer's peak RSS (target <= 200 MiB)
and checks its count equals the exact count the generator wrote. Files go to a temp
dir that is deleted afterwards.

    PYTHONPATH=. python scripts/bench_score.py [--size 1GiB] [--dispatch] [--no-gzip]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({result.returncode}): {result.stderr.strip()}")
    return wall, result.stdout


def score_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "bisector", "score", str(path), "--json"]


def compare(label: str, path: Path, pipeline: str, expected: int) -> bool:
    grep_s, grep_out = timed(["bash", "-c", pipeline.format(f=path)])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    score_s, out = timed(score_cmd(path))
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    metrics = json.loads(out)["metrics"]
    count = metrics["conflicts"]
    size = path.stat().st_size / (1 << 30)
    print(f"[{label}] {path.name}: {size:.2f} GiB")
    print(f"  grep pipeline : {grep_s:7.2f} s  count {int(grep_out.strip()):,}")
    print(f"  bisector score: {score_s:7.2f} s  count {count:,} (exact {expected:,})")
    print(f"  ratio score/grep = {score_s / grep_s:.2f}  (target <= 1.0)")
    peak = f"{peak_kib / 1024:.0f} MiB" if peak_kib > before else f"<= {before / 1024:.0f} MiB"
    print(f"  peak RSS of the largest scorer process: {peak} (target <= 200 MiB)")
    print(f"  node_writes {metrics['node_writes']:,}  cacher_hwm {metrics['cacher_hwm']}")
    print(f"  dispatch_lag_s {metrics['dispatch_lag_s']}")
    return bool(count == expected)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1GiB", help="log size, e.g. 512MiB, 1GiB, 2GiB")
    parser.add_argument("--conflict-rate", type=float, default=0.05)
    parser.add_argument("--dispatch", action="store_true", help="add AAA dispatch lines")
    parser.add_argument("--no-gzip", action="store_true", help="skip the gzip comparison")
    args = parser.parse_args()
    size = _parse_size(args.size)
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        log = Path(tmp) / "kube-apiserver.log"
        start = time.perf_counter()
        gen = generate(log, size, conflict_rate=args.conflict_rate, dispatch=args.dispatch)
        print(f"generated {gen.lines:,} lines in {time.perf_counter() - start:.0f} s")
        ok = compare("plain", log, GREP, gen.conflicts)
        if not args.no_gzip:
            packed = Path(tmp) / "kube-apiserver.log-20170602.gz"
            subprocess.run(["bash", "-c", f"gzip -1 -c {log} > {packed}"], check=True)
            log.unlink()  # keep disk use at one copy
            ok = compare("gzip", packed, ZGREP, gen.conflicts) and ok
    print("counts exact" if ok else "COUNT MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
