"""The signal, orphan, teardown and kill -9 tests, many times, several at once, beside load.

Machines that run real clusters are busy, and these tests race real processes and
signals: a suite that passes on a quiet machine is no proof. This runs the selected
test files `--rounds` times, `--jobs` pytest processes at once, beside `--burners`
CPU-bound processes, and prints one line per round and the totals (rounds, green
rounds, test runs, passes, failures, and each failing test with its count). Not part
of `make test`: it takes minutes and loads the machine on purpose.

    .venv/bin/python scripts/load_trust.py --rounds 5 --jobs 4 --burners 8
    .venv/bin/python scripts/load_trust.py --only tests/test_signals.py::test_x --rounds 28

`--checkout DIR` runs another tree's tests and code (an unpacked older commit, with
the built extension copied in) on the same settings, for a before/after comparison.
Exit status: 0 when every run passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Every test file that sends signals, kills -9, or checks teardown and orphan stopping.
DEFAULT_TESTS = (
    "tests/test_signals.py",
    "tests/test_orphans.py",
    "tests/commands/test_cleanup.py",
    "tests/faults/test_signals.py",
    "tests/faults/test_procs_signals.py",
    "tests/faults/test_kill9.py",
    "tests/faults/test_teardown.py",
    "tests/measure/test_teardown.py",
    "tests/measure/test_parallel_interrupt.py",
    "tests/measure/test_parallel_kill.py",
)
# CPU-bound until this script is gone, however it ends (a kill -9 too: no burner outlives it).
_BURN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


@dataclass
class Outcome:
    """What one pytest process said: test ids passed and failed (with a first line)."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def _junit(path: Path, target: str) -> Outcome:
    outcome = Outcome()
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        outcome.failed[target] = "pytest wrote no report (crashed or killed)"
        return outcome
    for case in tree.iter("testcase"):
        where = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        test = f"{where}::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            outcome.failed[test] = (bad.get("message") or "").splitlines()[0][:160]
        elif case.find("skipped") is None:
            outcome.passed.append(test)
    return outcome


def _run_pytest(checkout: Path, target: str, marker: str, timeout: float, report: Path) -> Outcome:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target]
    cmd += ["--junitxml", str(report), "-o", "junit_family=xunit1"]
    if marker:
        cmd += ["-m", marker]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    try:
        subprocess.run(
            cmd, cwd=checkout, env=env, timeout=timeout, check=False, capture_output=True
        )
    except subprocess.TimeoutExpired:
        return Outcome(failed={target: f"timed out after {timeout:g}s"})
    return _junit(report, target)


@contextmanager
def _burners(count: int) -> Iterator[None]:
    started = [subprocess.Popen([sys.executable, "-c", _BURN]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in started:
            burner.kill()
            burner.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=4, help="pytest processes at once")
    parser.add_argument("--burners", type=int, default=8, help="CPU-bound processes beside")
    parser.add_argument("--only", nargs="+", default=list(DEFAULT_TESTS), metavar="TEST")
    parser.add_argument("-m", dest="marker", default="", help="pytest -m expression")
    parser.add_argument("--timeout", type=float, default=1200.0, help="per pytest process")
    parser.add_argument("--checkout", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()

    print(
        f"load_trust: {args.burners} CPU-bound processes on {os.cpu_count()} CPUs, "
        f"{args.jobs} pytest at once, {len(args.only)} target(s) x {args.rounds} rounds, "
        f"checkout {checkout}",
        flush=True,
    )
    tasks = [(r, target) for r in range(args.rounds) for target in args.only]
    left = collections.Counter(r for r, _ in tasks)
    rounds: dict[int, Outcome] = collections.defaultdict(Outcome)
    began = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="load-trust-") as scratch,
        _burners(args.burners),
        concurrent.futures.ThreadPoolExecutor(args.jobs) as pool,
    ):
        futures = {
            pool.submit(
                _run_pytest,
                checkout,
                target,
                args.marker,
                args.timeout,
                Path(scratch) / f"{n}.xml",
            ): r
            for n, (r, target) in enumerate(tasks)
        }
        for future in concurrent.futures.as_completed(futures):
            r = futures[future]
            outcome = future.result()
            rounds[r].passed += outcome.passed
            rounds[r].failed.update(outcome.failed)
            left[r] -= 1
            if left[r] == 0:
                done = rounds[r]
                print(
                    f"round {r + 1}: {len(done.passed)} passed, {len(done.failed)} failed "
                    f"({time.monotonic() - began:.0f} s since the start)",
                    flush=True,
                )
                for test, why in sorted(done.failed.items()):
                    print(f"  FAILED {test}: {why}", flush=True)

    passes = sum(len(o.passed) for o in rounds.values())
    failures = collections.Counter(t for o in rounds.values() for t in o.failed)
    green = sum(1 for o in rounds.values() if not o.failed)
    print(
        f"rounds: {args.rounds}, green: {green}; test runs: {passes + sum(failures.values())}, "
        f"passed: {passes}, failed: {sum(failures.values())} "
        f"({time.monotonic() - began:.0f} s)"
    )
    for test, count in failures.most_common():
        print(f"  {count} x {test}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
