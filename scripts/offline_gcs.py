"""How long `bisector history` and `bisector score gs://` take to give up with no network.

    python scripts/offline_gcs.py [--baseline /path/to/older/checkout] [--cap 900]

"No network" is simulated on loopback, never by reaching Google:
* refused: STORAGE_EMULATOR_HOST points at a local port nobody listens on;
* blackhole: it points at a socket whose listen queue is full and never
  accepted, so connecting hangs until a connect timeout (a dropped SYN).

Each command runs as the CLI in a child process (PYTHONPATH = the checkout under
test), at most CAP seconds. Prints, per command and mode, the seconds, the exit
code and how many lines it printed, for this checkout and (with --baseline) the
other one side by side, with the ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
COMMANDS = {
    "history": [
        "history",
        "--job",
        "ci-kubernetes-kubemark-500-gce",
        "--bucket",
        "kubernetes-jenkins",
        "--runs",
        "427..430",
        "--no-cache",
    ],
    "score": [
        "score",
        "gs://kubernetes-jenkins/logs/ci-kubernetes-kubemark-500-gce/427/artifacts/"
        "e2e-427-kubemark-master/kube-apiserver.log",
        "--metric",
        "conflicts",
        "--threshold",
        "5",
    ],
}


@dataclass(frozen=True)
class Outcome:
    seconds: float
    code: int | None  # None: still running at the cap (killed)
    lines: list[str]


@contextlib.contextmanager
def refused() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}"  # closed again: nobody listens there


@contextlib.contextmanager
def blackhole() -> Iterator[str]:
    """A listener that never accepts, its queue filled: new connections hang in SYN."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept queue (its length is backlog + 1 on Linux)
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.2)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


def run_cli(tree: Path, args: list[str], host: str, cap: float, cache: Path) -> Outcome:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "STORAGE_EMULATOR_HOST": host,
        "BISECTOR_CACHE_DIR": str(cache),
    }
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "bisector", *args],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = child.communicate(timeout=cap)
        code: int | None = child.returncode
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        code = None
    return Outcome(time.monotonic() - start, code, out.strip().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an older checkout to compare with")
    parser.add_argument("--cap", type=float, default=900.0, help="seconds before giving up")
    parser.add_argument("--modes", default="refused,blackhole")
    options = parser.parse_args()
    trees = {"this": HERE}
    if options.baseline:
        trees["baseline"] = options.baseline.resolve()
    modes = {"refused": refused, "blackhole": blackhole}
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "offline-gcs-cache"
    for mode in options.modes.split(","):
        with modes[mode]() as host:
            jobs = {
                (name, label): (tree, argv)
                for name, argv in COMMANDS.items()
                for label, tree in trees.items()
            }
            with ThreadPoolExecutor(len(jobs)) as pool:
                futures = {
                    key: pool.submit(run_cli, tree, argv, host, options.cap, cache)
                    for key, (tree, argv) in jobs.items()
                }
                results = {key: f.result() for key, f in futures.items()}
        for name in COMMANDS:
            row = [f"{mode:9} {name:8}"]
            for label in trees:
                r = results[(name, label)]
                shown = "killed at cap" if r.code is None else f"exit {r.code}"
                row.append(f"{label}: {r.seconds:7.1f}s {shown}, {len(r.lines)} line(s)")
            if "baseline" in trees:
                ratio = results[(name, "baseline")].seconds / results[(name, "this")].seconds
                row.append(f"ratio {ratio:.1f}x")
            print(" | ".join(row))
            for line in results[(name, "this")].lines[-3:]:
                print(f"    this: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
