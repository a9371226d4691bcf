"""Change-point finders side by side on the same series: which one `history` and `nightly` use.

    PYTHONPATH=. python scripts/compare_changepoints.py [--trials 30] [--seed 1] \\
        [--venvs DIR [--make-venvs]] [--before REV]

Candidates (columns), each run on exactly the same series:
    hand-written   bisector/ci/changepoint.py of git revision REV (default 82c7c37, the
                   finder this replaced, read with `git show`, nothing edited): one step,
                   the split misclassifying fewest runs against a threshold placed in
                   the largest log-median split
    bisector       bisector.ci.changepoint.find_change_points (ruptures KernelCPD, linear
                   kernel, on log values over the noise scale; then a robust z-test and
                   the two-runs-beyond-the-midpoint rule per change point)
    ruptures       the same ruptures segmentation alone, without the test (what it adds)
    e-divisive     MongoDB's signal-processing-algorithms `e_divisive(series, pvalue=0.05,
                   permutations=100)` (its defaults), on the raw values
    otava          Apache Otava `otava.analysis.compute_change_points(series)` (its CLI's
                   defaults: window 50, max p-value 0.001, no minimum magnitude), raw values

e-divisive and otava pin dependencies this project cannot share (numpy<2, numpy==2.2.0,
Python <3.12): each runs in its own virtualenv, DIR/<pypi name>/bin/python, which
`--make-venvs` creates with pip. This script is run there with `--worker NAME` and the
series as JSON on stdin; the times it reports are measured inside the worker, per series.
Without `--venvs` those columns are left out.

Series (rows): the 2017 incident table `bisector history` tests use
(tests/helpers/ci_history.py, runs 427..447, step at run 446), and CL2-like API latencies
(40 ms, log-normal noise sigma 0.12, 5 % of runs without data) with planted changes:
two steps, one step, none (40 and 200 runs), a step 3 runs from either end, one step
among 3 outliers (x3 spikes), a lower-is-worse throughput that drops 30 %, a regression
then its fix, and short series of 8-10 runs. Steps are +50 % (the second of two, +35 %).

Counted per candidate and row, over `--trials` series (the incident table once):
    found   planted changes reported at the right index (+-1), of all planted
    fp      reported change points that match no planted change, per series
    hunt    series where the regression a bisection would hunt (the newest one making
            the metric worse; for index-only libraries, the newest change point whose
            segment medians moved the worse way) brackets the newest planted regression,
            or, with none planted, nothing is hunted
    width   runs the hunted range spans (last good to first bad), when it is right:
            each doubling costs a bisection one more evaluation
    ms      median time per series (the finder alone; the worker's start is not counted)
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = {"e-divisive": "signal-processing-algorithms", "otava": "apache-otava"}
TOLERANCE = 1


@dataclass(frozen=True)
class Case:
    name: str
    values: list[float | None]
    planted: list[int]  # index of the first run at each new level
    hunt: int | None  # the newest planted regression (what a bisection must bracket)
    higher_is_worse: bool = True


@dataclass
class Found:
    """One candidate's answer on one series: change points and the range it would hunt."""

    points: list[int]
    hunt: tuple[int, int] | None  # (last good, first bad) run indices
    seconds: float


# --- series ------------------------------------------------------------------------------


def incident_case() -> Case:
    from tests.helpers.ci_history import incident_history

    runs = incident_history()
    values: list[float | None] = [
        float(r.conflicts) if r.logs and r.verbosity >= 3 else None for r in runs
    ]
    step = next(i for i, r in enumerate(runs) if r.run == 446)
    return Case("incident-2017", values, [step], step)


def _cl2(
    rng: Any, n: int, steps: Sequence[tuple[int, float]], *, base: float = 40.0, gaps: bool = True
) -> list[float | None]:
    from tests.helpers.series import cl2_series

    return cl2_series(rng, n, steps, base=base, gaps=0.05 if gaps else 0.0)


def cl2_cases(rng: Any) -> list[Case]:
    cases = [
        Case("two-steps-60", _cl2(rng, 60, [(20, 1.5), (40, 1.35)]), [20, 40], 40),
        Case("one-step-40", _cl2(rng, 40, [(20, 1.5)]), [20], 20),
        Case("no-step-40", _cl2(rng, 40, []), [], None),
        Case("no-step-200", _cl2(rng, 200, []), [], None),
        Case("near-start-40", _cl2(rng, 40, [(3, 1.5)]), [3], 3),
        Case("near-end-40", _cl2(rng, 40, [(37, 1.5)]), [37], 37),
    ]
    spiked = _cl2(rng, 40, [(20, 1.5)])
    spots = rng.choice([5, 9, 13, 26, 30, 34], size=3, replace=False)  # lone ones, apart
    for i in spots:
        if spiked[int(i)] is not None:
            spiked[int(i)] = float(spiked[int(i)] or 0.0) * 3.0
    cases.append(Case("outliers-40", spiked, [20], 20))
    throughput = _cl2(rng, 40, [(20, 0.7)], base=100.0)
    cases.append(Case("lower-worse-40", throughput, [20], 20, higher_is_worse=False))
    cases.append(Case("fixed-later-60", _cl2(rng, 60, [(20, 1.5), (40, 1 / 1.5)]), [20, 40], 20))
    n = int(rng.integers(8, 11))
    cases.append(Case("short-8-10", _cl2(rng, n, [(n // 2, 1.5)], gaps=False), [n // 2], n // 2))
    return cases


# --- candidates in this interpreter --------------------------------------------------------


def _valid(values: Sequence[float | None]) -> tuple[list[int], list[float]]:
    index = [i for i, v in enumerate(values) if v is not None]
    return index, [float(v) for v in values if v is not None]


def _worse_range(
    values: Sequence[float | None], points: Sequence[int], higher_is_worse: bool
) -> tuple[int, int] | None:
    """For an index-only answer: the newest change point whose segments moved the worse way."""
    index, valid = _valid(values)
    at = [index.index(p) for p in points if p in index]
    bounds = [0, *sorted(at), len(valid)]
    for k in range(len(bounds) - 2, 0, -1):
        before = statistics.median(valid[bounds[k - 1] : bounds[k]])
        after = statistics.median(valid[bounds[k] : bounds[k + 1]])
        if (after > before) == higher_is_worse and after != before:
            return index[bounds[k] - 1], index[bounds[k]]
    return None


def old_module(rev: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:bisector/ci/changepoint.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("changepoint_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:bisector/ci/changepoint.py", "exec"), module.__dict__)
    return module


def hand_written(rev: str) -> Callable[[Case], Found]:
    old = old_module(rev)

    def run(case: Case) -> Found:
        start = time.perf_counter()
        step = old.find_step(case.values)
        took = time.perf_counter() - start
        if step is None:
            return Found([], None, took)
        return Found([step.first_bad], (step.last_good, step.first_bad), took)

    return run


def bisector_finder(case: Case) -> Found:
    from bisector.ci.changepoint import find_change_points, newest_regression

    start = time.perf_counter()
    points = find_change_points(case.values, higher_is_worse=case.higher_is_worse)
    took = time.perf_counter() - start
    chosen = newest_regression(points)
    hunt = (chosen.last_before, chosen.first_after) if chosen else None
    return Found([p.index for p in points], hunt, took)


def ruptures_alone(case: Case) -> Found:
    from bisector.ci.changepoint import noise_scale, segment

    index, valid = _valid(case.values)
    start = time.perf_counter()
    logs = [math.log1p(v) for v in valid]
    cuts = segment(logs, noise_scale(logs), 2)
    took = time.perf_counter() - start
    points = [index[c] for c in cuts]
    return Found(points, _worse_range(case.values, points, case.higher_is_worse), took)


# --- candidates in their own virtualenv ----------------------------------------------------


def worker(name: str) -> int:
    """Run in the library's own virtualenv: series on stdin, change points and times out."""
    series: list[list[float]] = json.load(sys.stdin)
    np: Any = importlib.import_module("numpy")
    np.random.seed(1)  # e-divisive's permutations use numpy's global generator
    if name == "e-divisive":
        spa: Any = importlib.import_module(
            "signal_processing_algorithms.energy_statistics.energy_statistics"
        )

        def find(values: list[float]) -> list[int]:
            return [int(i) for i in spa.e_divisive(values)]

    else:
        otava: Any = importlib.import_module("otava.analysis")

        def find(values: list[float]) -> list[int]:
            return [int(c.index) for c in otava.compute_change_points(values)[0]]

    find([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])  # imports done, outside the timed calls
    answers = []
    for values in series:
        start = time.perf_counter()
        found = find(values)
        answers.append({"points": sorted(found), "seconds": time.perf_counter() - start})
    json.dump(answers, sys.stdout)
    return 0


def in_venv(name: str, python: Path) -> Callable[[list[Case]], list[Found]]:
    def run(cases: list[Case]) -> list[Found]:
        series = [_valid(c.values)[1] for c in cases]
        done = subprocess.run(
            [str(python), str(Path(__file__).resolve()), "--worker", name],
            input=json.dumps(series),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{name} worker failed: {done.stderr.strip()[-2000:]}")
        found = []
        for case, answer in zip(cases, json.loads(done.stdout), strict=True):
            index, _ = _valid(case.values)
            points = [index[p] for p in answer["points"] if 0 < p < len(index)]
            hunt = _worse_range(case.values, points, case.higher_is_worse)
            found.append(Found(points, hunt, answer["seconds"]))
        return found

    return run


def make_venvs(directory: Path) -> None:
    for package in LIBRARIES.values():
        target = directory / package
        if (target / "bin" / "python").exists():
            continue
        print(f"creating {target} (pip install {package})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", package]
        subprocess.run(pip, check=True)


# --- scoring -------------------------------------------------------------------------------


@dataclass
class Tally:
    planted: int = 0
    found: int = 0
    false_positives: int = 0
    hunted_right: int = 0
    widths: list[int] | None = None
    series: int = 0
    seconds: list[float] | None = None

    def add(self, case: Case, answer: Found) -> None:
        unmatched = list(case.planted)
        for point in answer.points:
            near = [p for p in unmatched if abs(p - point) <= TOLERANCE]
            if near:
                unmatched.remove(near[0])
            else:
                self.false_positives += 1
        self.planted += len(case.planted)
        self.found += len(case.planted) - len(unmatched)
        if case.hunt is None:
            self.hunted_right += answer.hunt is None
        elif answer.hunt is not None and answer.hunt[0] < case.hunt <= answer.hunt[1]:
            self.hunted_right += 1
            self.widths = [*(self.widths or []), answer.hunt[1] - answer.hunt[0]]
        self.series += 1
        self.seconds = [*(self.seconds or []), answer.seconds]

    def cells(self) -> list[str]:
        found = f"{self.found}/{self.planted}" if self.planted else "-"
        ms = statistics.median(self.seconds or [0.0]) * 1000
        width = f"{statistics.mean(self.widths):.1f}" if self.widths else "-"
        return [
            found,
            f"{self.false_positives / self.series:.2f}",
            f"{self.hunted_right}/{self.series}",
            width,
            f"{ms:.1f}",
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--venvs", type=Path, help="DIR/<pypi name>/bin/python per library")
    parser.add_argument("--make-venvs", action="store_true", help="create them with pip")
    parser.add_argument("--before", default="82c7c37", help="revision of the hand-written one")
    parser.add_argument("--worker", choices=sorted(LIBRARIES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker)

    import numpy as np

    rng = np.random.default_rng(args.seed)
    cases = [incident_case()]
    for _ in range(args.trials):
        cases += cl2_cases(rng)
    names = [c.name for c in cases[: 1 + len(cl2_cases(np.random.default_rng(0)))]]

    answers: dict[str, list[Found]] = {}
    bisector_finder(cases[0])  # imports ruptures and scipy, outside the timed calls
    for label, one in (
        ("hand-written", hand_written(args.before)),
        ("bisector", bisector_finder),
        ("ruptures", ruptures_alone),
    ):
        answers[label] = [one(c) for c in cases]
    if args.venvs is not None:
        if args.make_venvs:
            make_venvs(args.venvs)
        for label, package in LIBRARIES.items():
            python = args.venvs / package / "bin" / "python"
            if python.exists():
                answers[label] = in_venv(label, python)(cases)
            else:
                print(f"{label}: no {python} (--make-venvs creates it)", file=sys.stderr)

    print(f"{args.trials} trials per CL2-like row (seed {args.seed}); the incident table once")
    print("cells: found (+-1), fp per series, hunt right, width, median ms per series\n")
    header = ["series", *answers]
    rows = []
    totals = {label: Tally() for label in answers}
    for name in names:
        row = [name]
        for label, found in answers.items():
            tally = Tally()
            for case, answer in zip(cases, found, strict=True):
                if case.name == name:
                    tally.add(case, answer)
                    totals[label].add(case, answer)
            row.append(" ".join(tally.cells()))
        rows.append(row)
    rows.append(["all", *(" ".join(t.cells()) for t in totals.values())])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
