"""Hours to culprit: wall time and cluster-hours of a bisection on a simulated clock.

Replays bisections of (a) the demo history (bisector.sim.demo_repo, seed 0, 40 PRs, six
commits that do not build) and (b) incident-shaped ranges: 95 first-parent merges
whose PR sizes are those of the real range 1444d25..7043372 (kubernetes, counted with
`git rev-list --count M^1..M^2` for each first-parent merge M; 229 commits in all),
with the culprit PR shaped like #46588 (two commits, the second one bad) at the real
position (merge #24) and at four others. Every bisection runs through the real
orchestrator (`run_bisection`: evaluator, search, journal, early verdicts, prefetch)
and real git, with an in-process backend whose phases advance a simulated clock.

Phases (issue 15, the 2017 kubemark-5000 job): make quick-release 30 min, base
cluster once (15 min, assumed: the thread gives no figure), start-kubemark 12 min,
warmup 30 min, log copy 2 min, stop-kubemark 5 min. A build that fails costs its
build time and no cluster.

The log over a run (from the incident, kubernetes#46851): a good tree reaches 8,688
node PATCH conflicts in 30 minutes (run 442), linearly; a bad one saturates the
cacher at 2 minutes and reaches 1,549,982 at 30 minutes, linearly in between. The
threshold is calibrated from the endpoints (geometric mean, about 116,000).

Variants, all at the same culprit (checked per trial and printed):
  git bisect run   `git bisect run` itself (real git) with a script that runs one full
                   evaluation per step: no endpoints, no confirmation, all commits
                   (no --first-parent in 2017), fixed warmup, no prefetch
  before           bisector without this change: endpoints, --first-parent with the
                   descent into the PR, confirmation, full warmups, no prefetch
  +early bad       [run] check_every = "2m": bad warmups end once past the threshold
  +early bad+good  and [run] early_good = true: good search warmups end after twice the
                   bad endpoint's onset when on course for under half the threshold
  +prefetch        [run] prefetch_builds = 2: both next midpoints built while a cluster
                   starts and warms up
  +all             early bad+good and prefetch
  +all -P2         all, --parallel 2 with prefetch_builds = 6 (the next round's 2 picks
                   for each of the 3 parts this round can leave)

Every early good verdict is checked against the truth (the commit's tree): the table's
"eg wrong" column counts those that were wrong (a wrong one would be caught by the
parent's full-length confirmation and cost a second search; none should happen here).

Clock rules: an evaluation costs build (0 when its build was prefetched, or when the
backend's build cache keyed by tree has it, as gce/kind's BuildCache does) + launch +
warmup (to the early stop) + collect + teardown; prefetched builds start when the
evaluation's own build is done (with the launch) and the evaluation waits for them (as
the evaluator does), so its part from the launch lasts at least one build. A round of
parallel slots lasts as long as its longest evaluation. Cluster-hours: launch to end of
teardown of every evaluation (the kubemark clusters; a base cluster kept up for the whole
bisection is not counted there). What the machines cost is in vCPU-hours: the 2017 job
(test-infra f57ef50d, jobs/ci-kubernetes-kubemark-gce-scale.env) ran a base cluster of
NUM_NODES=80 n1-highmem-8 and an n1-standard-4 master (644 vCPUs, up for the whole
bisection, one per parallel slot) and a kubemark master n1-standard-64 (64 vCPUs, the
"cluster" of an evaluation): vCPU-h = slots x 644 x wall + 64 x cluster-h.

    PYTHONPATH=. python scripts/bench_hours.py            # ~10 min on 2 busy cores
    PYTHONPATH=. python scripts/bench_hours.py --quick    # demo + the real position only
"""

from __future__ import annotations

import argparse
import io
import math
import multiprocessing
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector.backends.base import BackendTraits, Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.config import Section
from bisector.cost import KUBEMARK_2017, Phases, SearchShape, cost, expected_search
from bisector.errors import BuildError
from bisector.logs import LogWindow, Scores
from bisector.measure.evaluator import Evaluator
from bisector.measure.journal import Measured, read_journal
from bisector.settings import RunSettings
from bisector.sim import ProfileError, load_profile
from bisector.ui.progress_lines import PlainProgress

PHASES: Phases = KUBEMARK_2017
GOOD_30M, BAD_30M, SATURATED_S = 8_688.0, 1_549_982.0, 120.0
BASE_VCPUS = 80 * 8 + 4  # NUM_NODES=80 n1-highmem-8 + MASTER_SIZE=n1-standard-4
KUBEMARK_MASTER_VCPUS = 64  # KUBEMARK_MASTER_SIZE=n1-standard-64
CHECK_EVERY_S = 120.0
# PR sizes of the 95 first-parent merges of 1444d25..7043372, oldest first (see above).
PR_SIZES = [
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 1, 1,
    1, 1, 1, 2, 1, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 7, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 2, 1, 9, 3, 7, 2, 1, 1, 1, 1, 1, 1, 1, 2, 1,
    1, 1, 1, 1, 1,
]  # fmt: skip
REAL_CULPRIT_MERGE = 24  # 0-based among the 95: the merge of PR #46588


def conflicts_at(bad: bool, t: float) -> float:
    """Node PATCH conflicts in the log after `t` seconds of warmup."""
    if not bad:
        return GOOD_30M * t / PHASES.warmup_s
    if t <= SATURATED_S:
        return GOOD_30M * t / PHASES.warmup_s
    return BAD_30M * (t - SATURATED_S) / (PHASES.warmup_s - SATURATED_S)


# -- the backend on a simulated clock ------------------------------------------------


@dataclass
class Evaluation:
    commit: str
    build_s: float
    warmup_s: float = 0.0
    cluster_s: float = 0.0
    prefetch_started: bool = False


@dataclass
class Clock:
    """Evaluations grouped into rounds (the evaluator's rounds of concurrent slots)."""

    rounds: list[list[Evaluation]] = field(default_factory=list)
    current: list[Evaluation] | None = None

    def evaluation_s(self, e: Evaluation) -> float:
        from_launch = e.cluster_s
        if e.prefetch_started:
            from_launch = max(from_launch, PHASES.build_s)
        return e.build_s + from_launch

    def wall_s(self) -> float:
        return PHASES.setup_s + sum(
            max((self.evaluation_s(e) for e in r), default=0.0) for r in self.rounds
        )

    def cluster_s(self) -> float:
        return sum(e.cluster_s for r in self.rounds for e in r)


class ClockBackend:
    """Build/launch/warmup/collect/teardown advancing a simulated clock; the 'log' of a
    run is its conflicts so far (the bench's scorer reads the number from the path)."""

    name = "clock"
    # Logs carry no timestamps here (no window rule); each evaluation writes its own 'log'.
    traits = BackendTraits(waits_warmup=False, own_logs=True, warmup_s=PHASES.warmup_s)

    def __init__(self, is_bad: Callable[[Path], bool | None], clock: Clock) -> None:
        self.is_bad = is_bad  # worktree -> bad?, None: does not build
        self.clock = clock
        self.lock = threading.Lock()
        self.built: dict[Path, bool] = {}  # eval dir -> bad?
        self.elapsed: dict[Path, float] = {}
        self.evals: dict[Path, Evaluation] = {}
        self.ready: set[str] = set()  # prefetched builds waiting in the build cache
        self.cache: set[str] = set()  # commits built (their tree is in the build cache)
        self.prefetch_used = 0
        self.last_built: Path | None = None

    def setup(self) -> None: ...
    def close(self) -> None: ...
    def plan(self, candidate: Candidate) -> list[str]:
        return []

    def _record(self, e: Evaluation) -> None:
        with self.lock:
            if self.clock.current is None:  # measured outside a round: a round of its own
                self.clock.rounds.append([e])
            else:
                self.clock.current.append(e)

    def build(self, candidate: Candidate) -> None:
        with self.lock:
            # The build cache keyed by tree (gce/kind's BuildCache): a commit built once,
            # ahead or for an earlier run (confirmation), is not built again.
            ahead = candidate.commit in self.ready and candidate.commit not in self.cache
            used = ahead or candidate.commit in self.cache
            self.cache.add(candidate.commit)
            self.prefetch_used += ahead
        e = Evaluation(candidate.commit, 0.0 if used else PHASES.build_s)
        self.evals[candidate.eval_dir] = e
        with self.lock:
            self.last_built = candidate.eval_dir
        self._record(e)
        bad = self.is_bad(candidate.worktree)
        if bad is None:
            raise BuildError("does not build")
        self.built[candidate.eval_dir] = bad

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        with self.lock:
            # Started once the latest evaluation's own build was done (the evaluator starts
            # prefetches at its launch, and waits for them before it returns): that
            # evaluation waits for this build. The thread may run later on the real clock.
            if self.last_built is not None:
                self.evals[self.last_built].prefetch_started = True
        if self.is_bad(worktree) is None:
            raise BuildError("does not build")
        with self.lock:
            self.ready.add(commit)

    def prefetched(self, commit: str) -> bool:
        with self.lock:
            return commit in self.ready and commit not in self.cache

    def launch(self, candidate: Candidate) -> None:
        self.elapsed[candidate.eval_dir] = 0.0

    def warmup(self, candidate: Candidate) -> None:
        self.elapsed[candidate.eval_dir] = PHASES.warmup_s

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Iterator[float]:
        t = 0.0
        while t < PHASES.warmup_s:
            t = min(t + every_s, PHASES.warmup_s)
            self.elapsed[candidate.eval_dir] = t
            yield t

    def _log(self, candidate: Candidate) -> list[Path]:
        # The 'log': its conflicts so far and the time it covers (from the warmup's start).
        t = self.elapsed[candidate.eval_dir]
        return [Path(f"value={conflicts_at(self.built[candidate.eval_dir], t)};span={t}")]

    def peek(self, candidate: Candidate) -> list[Path]:
        return self._log(candidate)

    def collect(self, candidate: Candidate) -> list[Path]:
        e = self.evals[candidate.eval_dir]
        e.warmup_s = self.elapsed[candidate.eval_dir]
        return self._log(candidate)

    def teardown(self, candidate: Candidate) -> None:
        e = self.evals[candidate.eval_dir]
        warmup = self.elapsed.get(candidate.eval_dir, 0.0)
        e.warmup_s = warmup
        e.cluster_s = PHASES.launch_s + warmup + PHASES.collect_s + PHASES.teardown_s


def score_value(logs: list[str]) -> Scores:
    fields = dict(part.split("=", 1) for part in logs[0].split(";"))
    return Scores({"conflicts": float(fields["value"])}, seen=LogWindow(0.0, float(fields["span"])))


@dataclass(frozen=True)
class Variant:
    name: str
    early: bool = False
    early_good: bool = False
    prefetch: int = 0
    parallel: int = 1


VARIANTS = [
    Variant("before"),
    Variant("+early bad", early=True),
    Variant("+early bad+good", early=True, early_good=True),
    Variant("+prefetch", prefetch=2),
    Variant("+all", early=True, early_good=True, prefetch=2),
    Variant("+all -P2", early=True, early_good=True, prefetch=6, parallel=2),
]


@dataclass(frozen=True)
class History:
    name: str
    path: Path
    good: str
    bad: str
    culprit: str
    is_bad: Callable[[Path], bool | None]


@dataclass(frozen=True)
class Outcome:
    history: str
    variant: str
    culprit_ok: bool
    evaluations: int
    wall_s: float
    cluster_s: float
    early: int = 0
    prefetched_used: int = 0  # builds taken from a prefetch (not from an earlier build)
    early_good: int = 0  # search runs ended early as good
    early_good_wrong: int = 0  # ... whose commit was bad (the truth, from its tree)
    slots: int = 1

    @property
    def vcpu_h(self) -> float:
        base = self.slots * BASE_VCPUS * self.wall_s
        return (base + KUBEMARK_MASTER_VCPUS * self.cluster_s) / 3600


_ORIGINAL = Evaluator.concurrently
_CLOCKS: dict[int, Clock] = {}


def _timed(self: Evaluator, tasks: Sequence[Callable[[], Any]], phase: str) -> list[Any]:
    """The evaluator's rounds, marked on the clock of the running trial."""
    clock = _CLOCKS[os.getpid()]
    clock.current = []
    try:
        return _ORIGINAL(self, tasks, phase)
    finally:
        clock.rounds.append(clock.current)
        clock.current = None


def run_variant(history: History, variant: Variant, tmp: Path) -> Outcome:
    clock = Clock()
    _CLOCKS[os.getpid()] = clock
    Evaluator.concurrently = _timed  # type: ignore[method-assign]
    run: dict[str, object] = {"backend": "sim", "first_parent": True, "warmup": "30m"}
    if variant.early:
        run["check_every"] = f"{CHECK_EVERY_S:g}s"
    if variant.early_good:
        run["early_good"] = True
    run["prefetch_builds"] = variant.prefetch
    config = Section({"run": run, "search": {"parallel": variant.parallel}}, "bench.toml")
    settings = RunSettings.from_config(
        config, good=history.good, bad=history.bad, repo=history.path, run_dir=tmp / "run"
    )
    backend = ClockBackend(history.is_bad, clock)
    report = run_bisection(
        settings,
        backend=backend,
        progress=PlainProgress(io.StringIO()),
        scorer=score_value,
        write_report=False,
    )
    culprit = report.culprit.commit if report.culprit else None
    evaluations = report.evaluations
    early_goods = [
        r.measurement
        for r in read_journal(tmp / "run" / "journal.jsonl")
        if isinstance(r, Measured) and r.measurement.early_verdict == "good"
    ]
    wrong = sum(backend.built[Path(m.eval_dir)] for m in early_goods)
    return Outcome(
        history.name,
        variant.name,
        culprit == history.culprit and bool(report.confirmed),
        len(evaluations),
        clock.wall_s(),
        clock.cluster_s(),
        sum(1 for e in evaluations if e.stopped_early),
        backend.prefetch_used,
        len(early_goods),
        wrong,
        variant.parallel,
    )


SCRIPT = """#!{python}
# One step of `git bisect run`: 0 good, 1 bad, 125 cannot build.
import sys
sys.path[:0] = {path!r}
import bench_hours
sys.exit(bench_hours.git_bisect_step())
"""


def git_bisect_step() -> int:
    """The script `git bisect run` runs: judge the checked-out tree, log the step."""
    here = Path.cwd()
    verdict = _value_is_bad(here) if (here / "value").is_file() else _profile_is_bad(here)
    with Path(os.environ["BENCH_STEPS"]).open("a") as f:
        f.write(f"{'skip' if verdict is None else 'bad' if verdict else 'good'}\n")
    return 125 if verdict is None else 1 if verdict else 0


def run_git_bisect(history: History, tmp: Path) -> Outcome:
    """`git bisect run` on the range (every commit): each step one full evaluation."""
    work = tmp / "gitbisect"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(work), history.bad],
        cwd=history.path,
        check=True,
    )
    script = tmp / "step.py"
    here = [str(Path(__file__).resolve().parent), *sys.path]
    script.write_text(SCRIPT.format(python=sys.executable, path=here))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    steps_file = tmp / "steps.txt"
    env = {**os.environ, "BENCH_STEPS": str(steps_file)}
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "bisect", "start", history.bad, history.good], check=True, env=env,
                   capture_output=True)  # fmt: skip
    out = subprocess.run([*git, "bisect", "run", str(script)], env=env, capture_output=True,
                         text=True, check=False)  # fmt: skip
    if out.returncode != 0:
        print(f"git bisect run failed: {out.stdout[-2000:]}{out.stderr[-2000:]}", file=sys.stderr)
    subprocess.run([*git, "bisect", "reset"], capture_output=True, check=False)
    found = (
        out.stdout.split(" is the first bad commit")[0].split()[-1] if out.returncode == 0 else ""
    )
    steps = steps_file.read_text().split()
    clock = Clock()
    for verdict in steps:
        e = Evaluation("", PHASES.build_s)
        if verdict != "skip":
            e.warmup_s = PHASES.warmup_s
            e.cluster_s = PHASES.launch_s + PHASES.warmup_s + PHASES.collect_s + PHASES.teardown_s
        clock.rounds.append([e])
    return Outcome(
        history.name, "git bisect run", found == history.culprit, len(steps),
        clock.wall_s(), clock.cluster_s(),
    )  # fmt: skip


# -- the histories ------------------------------------------------------------------


def _value_is_bad(worktree: Path) -> bool | None:
    return int((worktree / "value").read_text()) >= 2


def _profile_is_bad(worktree: Path) -> bool | None:
    try:
        return not load_profile(worktree / "hack" / "kubemark-sim.toml").trigger_index
    except ProfileError:
        return None


def demo_history(root: Path) -> History:
    from bisector.sim.demo_repo import create_demo_repo

    demo = create_demo_repo(root / "demo", seed=0, prs=40)
    return History("demo", demo.path, demo.good, demo.bad, demo.culprit, _profile_is_bad)


def incident_history(root: Path, at: int) -> History:
    """95 merges with the real PR sizes; PR `at` is two commits, the second bad."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers.repo import PR, build_repo

    values = [1] + [1 if i < at else 2 for i in range(95)]
    prs = []
    for i, size in enumerate(PR_SIZES):
        if i == at:
            prs.append(PR(at=i + 1, values=[1, 2], number=46588))
        else:
            prs.append(PR(at=i + 1, values=[values[i + 1]] * size))
    name = f"incident@{at}"
    built = build_repo(root / name, values, prs=prs)
    culprit = built.pr_commits[46588][1]
    return History(name, built.path, built.mainline[0], built.mainline[-1], culprit, _value_is_bad)


def _make(name: str, root: Path) -> History:
    return demo_history(root) if name == "demo" else incident_history(root, int(name[9:]))


def trial(job: tuple[str, str]) -> Outcome:
    name, variant = job
    tmp = Path(tempfile.mkdtemp(prefix="bench-hours-"))
    try:
        history = _make(name, tmp)
        if variant == "git bisect run":
            return run_git_bisect(history, tmp)
        return run_variant(history, next(v for v in VARIANTS if v.name == variant), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- the table ------------------------------------------------------------------------


def _hm(seconds: float) -> str:
    m = round(seconds / 60)
    return f"{m // 60}h{m % 60:02d}m"


def table(outcomes: list[Outcome], names: list[str]) -> list[str]:
    lines = []
    for group, members in (
        ("demo history (39 first-parent merges, 6 commits do not build)", ["demo"]),
        ("incident-shaped range (95 first-parent merges, 229 commits)", [
            n for n in names if n.startswith("incident")
        ]),
    ):  # fmt: skip
        present = [n for n in members if n in names]
        if not present:
            continue
        lines.append(f"{group}; {len(present)} culprit position(s): " + ", ".join(present))
        lines.append(
            f"  {'variant':<16} {'culprit ok':>10} {'evals':>6} {'early':>6} {'eg wrong':>8} "
            f"{'pf used':>7} {'wall':>7} {'x plain':>7} {'cluster-h':>9} {'x plain':>7} "
            f"{'vCPU-h':>7} {'x plain':>7}"
        )
        rows = [o for o in outcomes if o.history in present]
        base = [o for o in rows if o.variant == "git bisect run"]
        base_wall = statistics.mean(o.wall_s for o in base) if base else math.nan
        base_cl = statistics.mean(o.cluster_s for o in base) if base else math.nan
        base_cpu = statistics.mean(o.vcpu_h for o in base) if base else math.nan
        for variant in ["git bisect run", *[v.name for v in VARIANTS]]:
            got = [o for o in rows if o.variant == variant]
            if not got:
                continue
            ok = sum(o.culprit_ok for o in got)
            wall = statistics.mean(o.wall_s for o in got)
            cl = statistics.mean(o.cluster_s for o in got) / 3600
            cpu = statistics.mean(o.vcpu_h for o in got)
            eg_wrong = f"{sum(o.early_good_wrong for o in got)}/{sum(o.early_good for o in got)}"
            lines.append(
                f"  {variant:<16} {ok:>5}/{len(got):<4} "
                f"{statistics.mean(o.evaluations for o in got):>6.1f} "
                f"{statistics.mean(o.early for o in got):>6.1f} {eg_wrong:>8} "
                f"{statistics.mean(o.prefetched_used for o in got):>7.1f} "
                f"{_hm(wall):>7} {wall / base_wall:>6.2f}x {cl:>9.1f} "
                f"{cl * 3600 / base_cl:>6.2f}x {cpu:>7.0f} {cpu / base_cpu:>6.2f}x"
            )
    return lines


def model_line() -> str:
    """What `--dry-run` (bisector.cost) expects for the incident-shaped range, to compare."""
    shape = SearchShape(95, descent_size=sum(PR_SIZES) / len(PR_SIZES) + 1)
    expected = expected_search(shape)
    costed = cost(expected, PHASES)
    return (
        f"cost model (--dry-run, full warmups, no prefetch) for the incident-shaped range: "
        f"{expected.evaluations} evaluations, wall {_hm(costed.wall_s)}, "
        f"{costed.cluster_hours:.1f} cluster-h"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="demo + the real culprit position")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    positions = [REAL_CULPRIT_MERGE] if args.quick else [REAL_CULPRIT_MERGE, 6, 47, 66, 90]
    names = ["demo", *[f"incident@{p}" for p in positions]]
    jobs = [(n, v) for n in names for v in ["git bisect run", *[v.name for v in VARIANTS]]]
    with multiprocessing.Pool(args.workers) as pool:
        outcomes = pool.map(trial, jobs, chunksize=1)
    print(
        f"bench_hours: phases build {_hm(PHASES.build_s)}, base cluster {_hm(PHASES.setup_s)} "
        f"once, launch {_hm(PHASES.launch_s)}, warmup {_hm(PHASES.warmup_s)}, collect "
        f"{_hm(PHASES.collect_s)}, teardown {_hm(PHASES.teardown_s)}; check_every "
        f"{CHECK_EVERY_S / 60:g}m; means over culprit positions"
    )
    for line in table(outcomes, names):
        print(line)
    print(model_line())
    wrong = [o for o in outcomes if not o.culprit_ok]
    print(f"same culprit in every trial: {'yes' if not wrong else 'NO: ' + repr(wrong)}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
