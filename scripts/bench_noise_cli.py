"""Right culprit at 10 % per-run flips, through the real CLI, threshold calibrated.

Each trial is a real git repository (tests/helpers/repo.py) of N + 1 mainline
commits: a planted culprit at a random position 1..N (from the trial's seed), good
commits scoring 100 conflicts, bad ones 1000. `python -m bisector run` runs it in a
subprocess with the `local` backend of tests/helpers/noisy_local.py, whose collect
writes that many node PATCH 409 lines, flipping a run to the other side with
probability p, decided by a hash of (trial seed, commit position, nth run of that
commit): every variant of a trial meets exactly the same noise. The run gets
`--error-rate p` and no threshold, so the threshold is calibrated from the
endpoints' runs.

Variants (columns), the same trials each:
    after                the source this script runs from
    endpoint_runs=1      the same source with `[search] endpoint_runs = 1`
    before:REV           bisector/ of git revision REV (from `git archive`, nothing edited),
                         e.g. before:0258f7f, the last commit before endpoints were measured
                         again until their runs separate

Counted per trial: right (the culprit named is the planted one), wrong-confirmed (a
culprit other than the planted one reported with exit 0, "confirmed"), aborted (the
run stopped with an error, e.g. "the bad endpoint does not score worse than the good
one"), evaluations (runs collected, over the trials not aborted), endpoint runs,
endpoint runs that flipped.

    PYTHONPATH=. python scripts/bench_noise_cli.py --trials 20 \\
        --variants after endpoint_runs=1 before:0258f7f
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.local_backend import bisector_argv
from tests.helpers.noisy_local import BAD_VALUE, GOOD_VALUE, Run, write_noisy_config
from tests.helpers.repo import build_repo

ROOT = Path(__file__).resolve().parents[1]
TRIAL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Variant:
    name: str
    source: Path  # directory holding the bisector package the CLI runs from
    search: dict[str, int]


@dataclass(frozen=True)
class Outcome:
    seed: int
    culprit: int  # planted position
    named: int | None  # position of the culprit the run reported
    exit_code: int
    status: str  # report status, or "aborted"
    confirmed: bool
    evaluations: int
    endpoint_runs: int
    endpoint_flips: int
    seconds: float
    error: str

    @property
    def right(self) -> bool:
        return self.named == self.culprit

    @property
    def wrong_confirmed(self) -> bool:
        return self.named is not None and not self.right and self.confirmed


def planted(seed: int, n: int) -> int:
    return random.Random(seed).randint(1, n)


def endpoint_prefix(runs: list[Run], n: int) -> list[Run]:
    """The endpoints' runs: with one slot they come first, before any other commit's
    (read from the runs themselves, so every version of bisector is counted alike)."""
    prefix: list[Run] = []
    for run in runs:
        if run.position not in (0, n):
            break
        prefix.append(run)
    return prefix


def run_trial(variant: Variant, seed: int, n: int, p: float) -> Outcome:
    culprit = planted(seed, n)
    tmp = Path(tempfile.mkdtemp(prefix="bench-noise-"))
    try:
        values = [GOOD_VALUE] * culprit + [BAD_VALUE] * (n + 1 - culprit)
        built = build_repo(tmp / "repo", values)
        driver = write_noisy_config(tmp, seed=seed, p=p, search=variant.search)
        run_dir = tmp / "run"
        argv = bisector_argv(
            "run",
            "--repo",
            str(built.path),
            "--config",
            str(driver.config),
            "--good",
            built.mainline[0],
            "--bad",
            built.mainline[-1],
            "--error-rate",
            str(p),
            "--run-dir",
            str(run_dir),
        )
        env = {**os.environ, "PYTHONPATH": str(variant.source)}
        started = time.monotonic()
        # cwd outside any checkout: `python -m` puts the cwd first on sys.path.
        result = subprocess.run(
            argv,
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=TRIAL_TIMEOUT_S,
        )
        seconds = time.monotonic() - started
        position = {c: i for i, c in enumerate(built.mainline)}
        named, confirmed, status = None, False, "aborted"
        report = run_dir / "report.json"
        if report.exists():
            data = json.loads(report.read_text())
            status = data["status"]
            if data.get("culprit"):
                named = position.get(data["culprit"]["commit"], -1)
                confirmed = bool(data["culprit"].get("confirmed")) and result.returncode == 0
        runs = driver.runs()
        endpoints = endpoint_prefix(runs, n)
        # The last line of stderr says why a run stopped (exit 3 is an answer: no line).
        failed = result.returncode not in (0, 3)
        error = (result.stderr.strip().splitlines() or [""])[-1] if failed else ""
        return Outcome(
            seed,
            culprit,
            named,
            result.returncode,
            status,
            confirmed,
            len(runs),
            len(endpoints),
            sum(r.flipped for r in endpoints),
            seconds,
            error,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _job(args: tuple[Variant, int, int, float]) -> tuple[str, Outcome]:
    variant, seed, n, p = args
    return variant.name, run_trial(variant, seed, n, p)


def _variant(spec: str, tmp: Path) -> Variant:
    if spec == "after":
        return Variant(spec, ROOT, {})
    if spec == "endpoint_runs=1":
        return Variant(spec, ROOT, {"endpoint_runs": 1})
    if spec.startswith("before:"):
        rev = spec.split(":", 1)[1]
        source = tmp / rev
        archive = tmp / f"{rev}.tar"
        with archive.open("wb") as out:
            subprocess.run(
                ["git", "-C", str(ROOT), "archive", rev, "bisector"], stdout=out, check=True
            )
        with tarfile.open(archive) as tar:
            tar.extractall(source, filter="data")
        return Variant(spec, source, {})
    raise SystemExit(
        f"bench_noise_cli: unknown variant {spec!r} (after, endpoint_runs=1, before:REV)"
    )


def _row(label: str, cells: list[str]) -> str:
    return f"{label:<26}" + "".join(f"{c:>18}" for c in cells)


def _median_max(values: list[int]) -> str:
    return f"{statistics.median(values):g} / {max(values)}" if values else "-"


def _right(outcomes: list[Outcome]) -> str:
    right = sum(o.right for o in outcomes)
    return f"{right}/{len(outcomes)} = {100 * right / len(outcomes):.0f}%"


def _ran(outcomes: list[Outcome]) -> list[Outcome]:
    """Trials that searched (an aborted one's 2 runs would flatter the median)."""
    return [o for o in outcomes if o.status != "aborted"]


def _count(test: Callable[[Outcome], bool]) -> Callable[[list[Outcome]], str]:
    return lambda outcomes: str(sum(test(o) for o in outcomes))


ROWS: list[tuple[str, Callable[[list[Outcome]], str]]] = [
    ("trials", lambda os_: str(len(os_))),
    ("right culprit", _right),
    ("confirmed (exit 0)", _count(lambda o: o.confirmed)),
    ("wrong and confirmed", _count(lambda o: o.wrong_confirmed)),
    (
        "wrong, not confirmed",
        _count(lambda o: o.named is not None and not o.right and not o.confirmed),
    ),
    ("aborted (error)", _count(lambda o: o.status == "aborted")),
    ("trials w/ endpoint flip", _count(lambda o: o.endpoint_flips > 0)),
    ("evaluations med / max", lambda os_: _median_max([o.evaluations for o in _ran(os_)])),
    ("endpoint runs total", lambda os_: str(sum(o.endpoint_runs for o in os_))),
    ("endpoint runs med / max", lambda os_: _median_max([o.endpoint_runs for o in os_])),
]


def table(names: list[str], results: dict[str, list[Outcome]], walls: dict[str, float]) -> str:
    lines = [_row("", names)]
    for label, cell in ROWS:
        lines.append(_row(label, [cell(results[v]) for v in names]))
    lines.append(_row("wall time (s)", [f"{walls[v]:.0f}" for v in names]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--commits", type=int, default=256, help="commits in good..bad")
    parser.add_argument("--p", type=float, default=0.1, help="chance a run's verdict flips")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first trial")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--variants", nargs="+", default=["after"], help="after, endpoint_runs=1, before:REV"
    )
    args = parser.parse_args(argv)
    if args.trials < 1 or args.commits < 2 or not 0 < args.p < 0.5:
        parser.error("need --trials >= 1, --commits >= 2 and 0 < --p < 0.5")
    with tempfile.TemporaryDirectory(prefix="bench-noise-src-") as src:
        variants = [_variant(spec, Path(src)) for spec in args.variants]
        names = [v.name for v in variants]
        seeds = range(args.seed, args.seed + args.trials)
        results: dict[str, list[Outcome]] = {v.name: [] for v in variants}
        walls: dict[str, float] = {}
        for variant in variants:
            jobs = [(variant, seed, args.commits, args.p) for seed in seeds]
            started = time.monotonic()
            with multiprocessing.Pool(args.workers) as pool:
                for name, o in pool.imap_unordered(_job, jobs):
                    results[name].append(o)
                    named = "-" if o.named is None else str(o.named)
                    print(
                        f"{name:<16} trial {o.seed:>3}: culprit {o.culprit:>4} named {named:>4} "
                        f"{'right' if o.right else 'WRONG'} exit {o.exit_code} {o.status}"
                        f"{' confirmed' if o.confirmed else ''}; {o.evaluations} evaluations, "
                        f"{o.endpoint_runs} endpoint runs ({o.endpoint_flips} flipped), "
                        f"{o.seconds:.0f}s {o.error}",
                        flush=True,
                    )
            walls[variant.name] = time.monotonic() - started
    print(
        f"\n{args.commits} commits, per-run flip p = {args.p}, --error-rate {args.p}, no threshold;"
        f" trial seeds {args.seed}..{args.seed + args.trials - 1}, {args.workers} workers"
    )
    print(table(names, results, walls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
