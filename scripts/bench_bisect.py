"""Noise-aware and parallel search vs plain `git bisect run` and a fixed majority of 3.

Every trial runs the real orchestrator (`run_bisection`: runner, strategies, the
decision rule, the posterior, the journal) with an in-process backend that
returns a simulated metric per run. Real git per trial is too slow for thousands
of trials on 2 shared cores, so the bulk runs against an in-memory linear
history (`LinearRepo` + `LinearSession`, standing in for GitRepo/BisectSession
through run_bisection's seams), and a small subset runs through real git
repositories (tests/helpers/repo.py) to show both agree.

Noise models (a culprit at a random position; good runs score ~100, bad ~1000):
    flip p        each run's verdict is flipped with probability p (threshold given)
    lognormal     good ~ 1000 * LN(0, 0.25), bad ~ 1600 * LN(0, 0.25): one run at the
                  calibrated midpoint is wrong ~17 % of the time
    unbuildable   15 % of commits fail to build (never the culprit or its parent), plus
                  flip p = 0.1

Methods: `git-bisect` (one run per commit, git's midpoint), `majority-3` (up to 3
runs per commit, stop at 2 agreeing), `bisector K=k` (probabilistic bisection
with the model's error rate or the metric likelihood, k slots per round; with
p = 0 it is plain git bisect split into k + 1 parts), and `K=4 unfolded`: K=4 with
`fold_rounds` off (idle slots do not measure ahead), the baseline of that change.
A run's noise is drawn from (trial, commit, nth run of it), so parallel trials
repeat exactly and every method of a trial meets the same noise.

Counted: every evaluation of the run (endpoints, search, confirmation of culprit
and parent); rounds: rounds of concurrent evaluations over all phases.
Correct: the culprit reported is the planted one. Wrong-confident: a culprit was
reported (for bisector: only when the posterior reached 0.99) and it is wrong.

    PYTHONPATH=. python scripts/bench_bisect.py            # full: ~15 min on 2 cores
    PYTHONPATH=. python scripts/bench_bisect.py --quick    # a few minutes
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import multiprocessing
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.base import BackendTraits, Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.config import Section
from bisector.errors import BisectorError, BuildError
from bisector.gitrepo import CommitInfo
from bisector.logs import Scores
from bisector.search.decide import MajorityRule
from bisector.settings import RunSettings
from bisector.ui.progress_lines import PlainProgress

GOOD_VALUE, BAD_VALUE = 100.0, 1000.0
LOGNORMAL = (1000.0, 1600.0, 0.25)  # good median, bad median, sigma of log
SHM = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


# -- the world: a history with a planted culprit, and runs with noise -------------


@dataclass(frozen=True)
class World:
    n: int  # commits in good..bad (the bad endpoint included)
    culprit: int  # position 1..n: first bad
    model: str  # "flip", "lognormal"
    p: float
    broken: frozenset[int]
    seed: int

    def run(self, position: int, rng: random.Random) -> float | None:
        if position in self.broken:
            return None
        bad = position >= self.culprit
        if self.model == "lognormal":
            good_median, bad_median, sigma = LOGNORMAL
            return (bad_median if bad else good_median) * rng.lognormvariate(0, sigma)
        if rng.random() < self.p:
            bad = not bad
        return BAD_VALUE if bad else GOOD_VALUE


class SimBackend:
    """In-process backend: build fails on broken commits; collect 'returns' a value."""

    name = "bench"
    traits = BackendTraits(own_logs=True)  # writes each evaluation's 'log' itself

    def __init__(self, world: World, positions: dict[str, int]) -> None:
        self.world = world
        self.positions = positions
        self.runs: dict[int, int] = {}  # position -> runs so far
        self.lock = threading.Lock()

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def launch(self, candidate: Candidate) -> None: ...
    def warmup(self, candidate: Candidate) -> None: ...
    def teardown(self, candidate: Candidate) -> None: ...

    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def build(self, candidate: Candidate) -> None:
        if self.positions[candidate.commit] in self.world.broken:
            raise BuildError("does not build")

    def collect(self, candidate: Candidate) -> list[Path]:
        # The noise of a commit's nth run is fixed by (trial, commit, n), not by the order
        # parallel slots happen to finish in: runs repeat exactly, and methods compare paired.
        position = self.positions[candidate.commit]
        with self.lock:
            self.runs[position] = nth = self.runs.get(position, 0) + 1
        rng = random.Random(f"{self.world.seed}:{position}:{nth}")
        value = self.world.run(position, rng)
        return [Path(f"value={value}")]


def score_value(logs: list[str]) -> Scores:
    """The bench's scorer: the 'log' names the value (no log files to parse)."""
    text = logs[0].rsplit("=", 1)[1]
    return Scores({} if text == "None" else {"conflicts": float(text)})


# -- in-memory stand-ins for GitRepo and BisectSession (linear history) ---------------


class LinearRepo:
    def __init__(self, commits: list[str], common_dir: Path) -> None:
        self.commits = commits
        self.index = {c: i for i, c in enumerate(commits)}
        self.common_dir = common_dir
        self.root = common_dir

    def resolve(self, rev: str) -> str:
        return rev

    def check_range(self, good: str, bad: str) -> None:
        if self.index[good] >= self.index[bad]:
            raise BisectorError("good must be older than bad")

    def tree_of(self, commit: str) -> str:
        return "t" + commit

    def info(self, commit: str) -> CommitInfo:
        i = self.index[commit]
        parents = (self.commits[i - 1],) if i else ()
        return CommitInfo(commit, "t" + commit, f"commit {i}", "Dev <d@x>", "2017-06-01", parents)

    def rev_list(
        self, good: str, bad: str, *, first_parent: bool = False, paths: tuple[str, ...] = ()
    ) -> list[str]:
        return self.commits[self.index[good] + 1 : self.index[bad] + 1]

    def bisect_midpoint(
        self,
        bad: str,
        goods: Sequence[str],
        *,
        first_parent: bool = False,
        paths: tuple[str, ...] = (),
    ) -> str | None:
        """LinearSession's pick between the newest of `goods` and `bad` (no skips)."""
        lo, hi = max(self.index[g] for g in goods), self.index[bad]
        if hi - lo <= 1:
            return None
        middle = (lo + hi) / 2
        return self.commits[min(range(lo + 1, hi), key=lambda i: (abs(i - middle), i))]

    def add_worktree(self, path: Path, commit: str, *, checkout: bool = True) -> None: ...
    def remove_worktree(self, path: Path) -> None: ...
    def remove_worktrees_under(self, directory: Path) -> None: ...

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        yield


class LinearSession:
    """git bisect's state machine on a linear history: goods accumulate, `bad X` moves
    the bad end to X, a skip excludes; git's pick is the middle of what is left."""

    def __init__(self, repo: LinearRepo, _worktree: Path) -> None:
        self.repo = repo
        self.lo = self.hi = 0
        self.skipped: set[int] = set()
        self.first_bad: str | None = None
        self.only_skipped_left = False
        self.possible_culprits: list[str] = []

    def start(
        self, good: str, bad: str, *, first_parent: bool = False, paths: tuple[str, ...] = ()
    ) -> None:
        self.lo, self.hi = self.repo.index[good], self.repo.index[bad]
        self.skipped = set()
        self._update()

    def mark(self, commit: str, verdict: str) -> None:
        i = self.repo.index[commit]
        if verdict == "good":
            self.lo = max(self.lo, i)
        elif verdict == "bad":
            self.hi = i
        else:
            self.skipped.add(i)
        self._update()

    def _open(self) -> list[int]:
        return [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]

    def _update(self) -> None:
        self.first_bad, self.only_skipped_left, self.possible_culprits = None, False, []
        if self._open():
            return
        between = range(self.lo + 1, self.hi + 1)
        if len(between) == 1:
            self.first_bad = self.repo.commits[self.hi]
        else:
            self.only_skipped_left = True
            self.possible_culprits = [self.repo.commits[i] for i in between]

    @property
    def done(self) -> bool:
        return self.first_bad is not None or self.only_skipped_left

    def next_commit(self) -> str | None:
        if self.done:
            return None
        middle = (self.lo + self.hi) / 2
        return self.repo.commits[min(self._open(), key=lambda i: (abs(i - middle), i))]

    def remaining(self) -> list[str]:
        if self.only_skipped_left:
            return list(self.possible_culprits)
        return [self.repo.commits[i] for i in range(self.hi, self.lo, -1)]

    def log(self) -> str:
        return ""

    def close(self) -> None: ...


# -- one trial ---------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    name: str
    repeats: int = 1
    slots: int = 1
    noise_aware: bool = False
    fold: bool = True  # idle slots measure ahead (False: the rounds before that, baseline)


@dataclass(frozen=True)
class Cell:
    n: int
    noise: str  # "flip 0", "flip 0.1", "flip 0.2", "lognormal", "unbuildable"


@dataclass(frozen=True)
class Outcome:
    correct: bool
    wrong_confident: bool
    failed: bool  # stopped with an error (e.g. endpoints did not separate)
    evaluations: int
    rounds: int


def make_world(cell: Cell, seed: int) -> World:
    rng = random.Random(seed)
    culprit = rng.randint(1, cell.n)
    broken: frozenset[int] = frozenset()
    if cell.noise == "unbuildable":
        pool = [i for i in range(1, cell.n) if i not in (culprit, culprit - 1)]
        broken = frozenset(rng.sample(pool, int(0.15 * cell.n)))
    if cell.noise == "lognormal":
        return World(cell.n, culprit, "lognormal", 0.0, broken, seed)
    p = 0.1 if cell.noise == "unbuildable" else float(cell.noise.split()[1])
    return World(cell.n, culprit, "flip", p, broken, seed)


def _options(
    world: World, method: Method, run_dir: Path, repo_path: Path, commits: list[str]
) -> RunSettings:
    search: dict[str, object] = {"parallel": method.slots}
    # The search's cost is measured here: no revert check (an in-memory history has no trees
    # to revert), as the model it is held to counts none without one.
    run: dict[str, object] = {"backend": "sim", "repeats": method.repeats, "revert_check": False}
    if world.model == "flip":
        run["threshold"] = (GOOD_VALUE * BAD_VALUE) ** 0.5
        if method.noise_aware:
            search["error_rate"] = world.p
    elif method.noise_aware:
        search["likelihood"] = "metric"
    config = Section({"run": run, "search": search}, "bench.toml")
    settings = RunSettings.from_config(
        config, good=commits[0], bad=commits[-1], repo=repo_path, run_dir=run_dir
    )
    searched = dataclasses.replace(settings.search, measure_ahead=method.fold)
    return dataclasses.replace(settings, search=searched)


def run_trial(cell: Cell, method: Method, seed: int, real_git: bool = False) -> Outcome:
    world = make_world(cell, seed)
    tmp = Path(tempfile.mkdtemp(dir=SHM if not real_git else None, prefix="bench-"))
    try:
        if real_git:
            from tests.helpers.repo import build_repo

            built = build_repo(tmp / "repo", [0] * (world.n + 1))
            commits = built.mainline
            repo = None
            repo_path = built.path
            session_kwargs: dict[str, object] = {}
        else:
            commits = [f"{i:040x}" for i in range(world.n + 1)]
            linear = LinearRepo(commits, tmp)
            repo, repo_path = linear, tmp
            session_kwargs = {"session_factory": LinearSession}
        positions = {c: i for i, c in enumerate(commits)}
        options = _options(world, method, tmp / "run", repo_path, commits)
        try:
            report = run_bisection(
                options,
                backend=SimBackend(world, positions),
                rule=MajorityRule(method.repeats),
                progress=PlainProgress(io.StringIO()),
                repo=repo,  # type: ignore[arg-type]
                scorer=score_value,
                write_report=False,
                **session_kwargs,  # type: ignore[arg-type]
            )
        except BisectorError:
            return Outcome(False, False, True, 0, 0)
        evaluations = sum(1 for e in report.evaluations)
        rounds = sum(report.search.rounds.values())
        culprit = report.culprit.commit if report.culprit else None
        correct = culprit is not None and positions[culprit] == world.culprit
        return Outcome(correct, culprit is not None and not correct, False, evaluations, rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _job(args: tuple[Cell, Method, int, bool]) -> tuple[Cell, Method, bool, Outcome]:
    cell, method, seed, real_git = args
    return cell, method, real_git, run_trial(cell, method, seed, real_git)


# -- the table -----------------------------------------------------------------------


METHODS = [
    Method("git-bisect"),
    Method("majority-3", repeats=3),
    Method("bisector K=1", noise_aware=True),
    Method("bisector K=2", slots=2, noise_aware=True),
    Method("bisector K=4", slots=4, noise_aware=True),
    Method("K=4 unfolded", slots=4, noise_aware=True, fold=False),
]
NOISES = ["flip 0", "flip 0.1", "flip 0.2", "lognormal", "unbuildable"]


def _pct(values: Sequence[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0


def summarize(outcomes: list[Outcome]) -> str:
    n = len(outcomes)
    ok = sum(o.correct for o in outcomes) / n
    wrong = sum(o.wrong_confident for o in outcomes) / n
    failed = sum(o.failed for o in outcomes) / n
    evals = [o.evaluations for o in outcomes if not o.failed]
    rounds = [o.rounds for o in outcomes if not o.failed]
    med_r = statistics.median(rounds) if rounds else 0
    med_e = statistics.median(evals) if evals else 0
    return (
        f"{n:>6} {100 * ok:7.1f}% {100 * wrong:7.1f}% {100 * failed:6.1f}% "
        f"{med_e:7.1f} {_pct(evals, 0.95):6d} {med_r:7.1f}"
    )


HEADER = (
    f"{'N':>5} {'noise':<12} {'method':<13} {'trials':>6} {'correct':>8} {'wrong!':>8} "
    f"{'error':>7} {'med ev':>7} {'p95 ev':>6} {'med rd':>7}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per cell and method")
    parser.add_argument("--git-trials", type=int, default=20, help="real-git trials per cell")
    parser.add_argument("--quick", action="store_true", help="60 trials, N = 64 and 256")
    parser.add_argument("--sizes", type=int, nargs="*", default=[64, 256, 1024])
    parser.add_argument("--noises", nargs="*", default=NOISES, choices=NOISES)
    parser.add_argument(
        "--methods", nargs="*", default=[m.name for m in METHODS], choices=[m.name for m in METHODS]
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    trials, sizes = args.trials, args.sizes
    if args.quick:
        trials, sizes = min(trials, 60), [s for s in sizes if s <= 256]
    methods = [m for m in METHODS if m.name in args.methods]
    cells = [Cell(n, noise) for n in sizes for noise in args.noises]
    jobs = [(c, m, seed, False) for c in cells for m in methods for seed in range(trials)]
    git_cells = [Cell(n, noise) for n in (64, 256) if n in sizes for noise in ("flip 0.1",)]
    git_methods = [m for m in (METHODS[0], METHODS[2], METHODS[4]) if m in methods]
    git_cells = git_cells if git_methods and args.git_trials else []
    jobs += [
        (c, m, seed, True)
        for c in git_cells
        for m in git_methods
        for seed in range(args.git_trials)
    ]
    started = time.monotonic()
    results: dict[tuple[Cell, str, bool], list[Outcome]] = {}
    with multiprocessing.Pool(args.workers) as pool:
        for cell, method, real_git, outcome in pool.imap_unordered(_job, jobs, chunksize=8):
            results.setdefault((cell, method.name, real_git), []).append(outcome)
    elapsed = time.monotonic() - started
    print(f"bench_bisect: {len(jobs)} trials in {elapsed:.0f}s on {args.workers} workers")
    print(
        "evaluations: endpoints + search + confirmation of culprit and parent; rounds: all "
        "phases; wrong!: a wrong culprit reported as found; error: run stopped with an error"
    )
    print(HEADER)
    for cell in cells:
        for method in methods:
            outcomes = results.get((cell, method.name, False), [])
            if outcomes:
                print(f"{cell.n:>5} {cell.noise:<12} {method.name:<13} {summarize(outcomes)}")
    if git_cells:
        print("\nthe same trials (seeds 0..) through real git repositories and git bisect:")
        print(HEADER)
        for cell in git_cells:
            for method in git_methods:
                for real in (False, True):
                    outcomes = results.get((cell, method.name, real), [])[: args.git_trials]
                    if real is False:
                        outcomes = [
                            run_trial(cell, method, seed) for seed in range(args.git_trials)
                        ]
                    label = method.name + (" git" if real else " mem")
                    print(f"{cell.n:>5} {cell.noise:<12} {label:<17}{summarize(outcomes)[4:]}")
    print_targets(results, trials)
    return 0


def print_targets(results: dict[tuple[Cell, str, bool], list[Outcome]], trials: int) -> None:
    def get(n: int, noise: str, method: str) -> list[Outcome]:
        return results.get((Cell(n, noise), method, False), [])

    print("\ntargets (N = 256):")
    for noise, want in (("flip 0.1", 0.95), ("flip 0.2", 0.90)):
        o = get(256, noise, "bisector K=1")
        if o:
            ok = sum(x.correct for x in o) / len(o)
            med = statistics.median(x.evaluations for x in o)
            print(
                f"  {noise}: correct {100 * ok:.1f}% (target >= {100 * want:.0f}%), "
                f"median evaluations {med:g} (target <= 30 at p = 0.1)"
            )
    wrong = [x for (c, m, r), v in results.items() if m.startswith("bisector") and not r for x in v]
    if wrong:
        rate = sum(x.wrong_confident for x in wrong) / len(wrong)
        print(f"  wrong culprit reported as found, all bisector cells: {100 * rate:.2f}% (<= 2%)")
    plain, ours = get(256, "flip 0", "git-bisect"), get(256, "flip 0", "bisector K=1")
    if plain and ours:
        print(
            f"  no noise: max evaluations git-bisect {max(x.evaluations for x in plain)}, "
            f"bisector {max(x.evaluations for x in ours)}"
        )
    for noise in ("flip 0", "flip 0.1", "lognormal"):
        one = get(256, noise, "bisector K=1")
        for name in ("bisector K=4", "K=4 unfolded"):
            four = get(256, noise, name)
            if one and four:
                r1 = statistics.median(x.rounds for x in one)
                r4 = statistics.median(x.rounds for x in four)
                print(
                    f"  {noise}: median rounds K=1 {r1:g}, {name} {r4:g}: "
                    f"{r1 / r4:.2f}x fewer (>= 2.5x)"
                )


if __name__ == "__main__":
    sys.exit(main())
