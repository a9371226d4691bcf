"""Benchmark `bisector history` scoring: streamed + threaded vs download-then-score, side by side.

    PYTHONPATH=. python scripts/bench_history.py [--runs 20] [--mib 100] [--workers 4]

Starts gcp-storage-emulator in its own process, uploads RUNS CI runs whose
kube-apiserver log is MIB MiB of 2017 wrap.go text each (a rotated pair: the
live `.log` gzip-encoded as `gsutil cp -z` stores it, and `.log.1.gz`), then
scores them twice, each pass in a fresh child process so its peak RSS is its own:

* streamed: `bisector.ci.scoring.score_runs` (no temp copies, WORKERS runs at once,
  cache off);
* baseline: the 2017 way, one run after another: download each object to a temp
  file, then score the local copies.

Prints wall time, throughput (MiB of log text per second), peak RSS of each pass
and the ratio, and checks both passes found the same conflict counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BUCKET = "bench-ci-logs"
JOB = "ci-kubernetes-kubemark-gce-scale"
MASTER = "kubemark-2000-kubemark-master"
BLOCK_MIB = 4


def _log_block(conflict_every: int, seed: int) -> bytes:
    """~BLOCK_MIB MiB of varied apiserver lines; every Nth node PATCH is a 409."""
    rnd = random.Random(seed)
    lines = []
    size = 0
    i = 0
    t = 5.0 * 3600 + 51 * 60
    while size < BLOCK_MIB << 20:
        i += 1
        t += rnd.random() * 0.002
        hh, rem = divmod(int(t), 3600)
        stamp = f"I0602 {hh:02d}:{rem // 60:02d}:{rem % 60:02d}.{int(t % 1 * 1e6):06d}       7"
        node = f"hollow-node-{rnd.randrange(5000)}"
        ip = f"10.240.{rnd.randrange(256)}.{rnd.randrange(256)}:{rnd.randrange(30000, 60000)}"
        ua = f"kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] {ip}]"
        kind = i % 10
        if kind < 6:
            status = 409 if i % conflict_every == 0 else 200
            line = f"PATCH /api/v1/nodes/{node}/status: ({rnd.random() * 9:.6f}ms) {status} [[{ua}"
        elif kind < 9:
            line = f"GET /api/v1/nodes/{node}: ({rnd.random() * 3:.6f}ms) 200 [[{ua}"
        else:
            line = (
                f"GET /api/v1/namespaces/kubemark/pods/{node}-{rnd.randrange(99999)}: "
                f"({rnd.random() * 3:.6f}ms) 404 [[{ua}"
            )
        text = f"{stamp} wrap.go:42] {line}\n"
        lines.append(text)
        size += len(text)
    return "".join(lines).encode()


def _gzip(data: bytes) -> bytes:
    from isal import igzip

    return bytes(igzip.compress(data, compresslevel=1))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_emulator(port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "gcp_storage_emulator", "start", "--port", str(port)]
    proc = subprocess.Popen(
        [*cmd, "--in-memory", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the GCS emulator did not start")


def _upload(client: Any, runs: int, mib: int) -> tuple[int, int]:
    """Upload the history; returns (bytes of log text, bytes stored)."""
    bucket = client.create_bucket(BUCKET)
    blocks = max(1, mib // BLOCK_MIB)
    half = max(1, blocks // 2)
    stored = text_bytes = 0
    variants: dict[int, tuple[bytes, bytes, int]] = {}
    for run in range(1, runs + 1):
        every = 50 if run <= runs // 2 else 5  # the second half regresses
        if every not in variants:
            block = _log_block(every, seed=every)
            older = _gzip(block * half)
            live = _gzip(block * (blocks - half))
            variants[every] = (older, live, len(block) * blocks)
        older, live, size = variants[every]
        prefix = f"logs/{JOB}/{run}/"
        bucket.blob(prefix + "started.json").upload_from_string(
            json.dumps({"timestamp": 1496382670 + run * 3600, "version": f"v1.7.0+{run:014x}"})
        )
        bucket.blob(prefix + "finished.json").upload_from_string(
            json.dumps({"timestamp": 1496390000 + run * 3600, "result": "SUCCESS"})
        )
        bucket.blob(f"{prefix}artifacts/{MASTER}/kube-apiserver.log.1.gz").upload_from_string(older)
        blob = bucket.blob(f"{prefix}artifacts/{MASTER}/kube-apiserver.log")
        blob.content_encoding = "gzip"
        blob.upload_from_string(live, content_type="text/plain")
        stored += len(older) + len(live)
        text_bytes += size
    return text_bytes, stored


def _phase_streamed(runs: int, workers: int) -> dict[str, Any]:
    from bisector.ci.cache import ScoreCache
    from bisector.ci.gcs import client
    from bisector.ci.runs import JobRef
    from bisector.ci.scoring import score_runs

    start = time.perf_counter()
    scored = score_runs(
        client(), JobRef(BUCKET, JOB), list(range(1, runs + 1)), ScoreCache(None), workers=workers
    )
    seconds = time.perf_counter() - start
    for s in scored:
        if s.problem:
            raise SystemExit(f"run {s.run}: {s.problem}")
    return {"seconds": seconds, "values": [s.value("conflicts") for s in scored]}


def _phase_baseline(runs: int) -> dict[str, Any]:
    from bisector.ci.gcs import client
    from bisector.logs import metric_value, score_logs

    storage = client()
    values = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(1, runs + 1):
            prefix = f"logs/{JOB}/{run}/artifacts/{MASTER}/"
            local = []
            for blob in storage.list_blobs(BUCKET, prefix=prefix):
                path = Path(tmp) / f"{run}-{blob.name.rsplit('/', 1)[-1]}"
                blob.download_to_filename(str(path))
                local.append(str(path))
            values.append(metric_value(score_logs(local), "conflicts"))
            for path_text in local:
                Path(path_text).unlink()
    return {"seconds": time.perf_counter() - start, "values": values}


def _child(phase: str, port: int, runs: int, workers: int) -> dict[str, Any]:
    env = {**os.environ, "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}"}
    cmd = [sys.executable, __file__, "--phase", phase, "--runs", str(runs)]
    done = subprocess.run(
        [*cmd, "--workers", str(workers)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{phase} pass failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mib", type=int, default=100, help="log text per run, MiB")
    parser.add_argument("--workers", type=int, default=4, help="runs scored at once")
    parser.add_argument("--phase", choices=["streamed", "baseline"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.phase == "streamed":
            result = _phase_streamed(args.runs, args.workers)
        else:
            result = _phase_baseline(args.runs)
        result["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    port = _free_port()
    emulator = _start_emulator(port)
    try:
        os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
        from google.cloud import storage  # type: ignore[import-untyped]

        t0 = time.perf_counter()
        text_bytes, stored = _upload(storage.Client.create_anonymous_client(), args.runs, args.mib)
        mib = text_bytes / (1 << 20)
        print(
            f"{args.runs} runs, {mib / args.runs:.0f} MiB of log text each ({mib:.0f} MiB), "
            f"stored gzip {stored / (1 << 20):.1f} MiB; set up in {time.perf_counter() - t0:.1f}s"
        )
        streamed = _child("streamed", port, args.runs, args.workers)
        baseline = _child("baseline", port, args.runs, args.workers)
    finally:
        emulator.kill()
        emulator.wait()
    if streamed["values"] != baseline["values"]:
        raise SystemExit(f"passes disagree: {streamed['values']} vs {baseline['values']}")
    print(f"{'pass':<34} {'seconds':>8} {'MiB/s':>8} {'peak RSS MiB':>13}")
    for name, res in (
        (f"streamed, {args.workers} runs at once", streamed),
        ("baseline: download, then score", baseline),
    ):
        print(
            f"{name:<34} {res['seconds']:>8.1f} {mib / res['seconds']:>8.1f} "
            f"{res['maxrss_mib']:>13.0f}"
        )
    print(
        "speed-up (baseline time / streamed time): "
        f"{baseline['seconds'] / streamed['seconds']:.2f}x"
    )
    print(f"conflicts per run: {streamed['values']}")


if __name__ == "__main__":
    main()
