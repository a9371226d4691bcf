"""The one cost model: evaluations, rounds, wall time, cluster-hours and money of a bisection.

Used by `--dry-run` (bisector.bisection.plan) and scripts/bench_hours.py.

Evaluations and rounds (what scripts/bench_bisect.py counts: endpoints, search,
descent into a merged branch, confirmation of culprit and parent):
* plain git bisect, K slots: each round splits what is left into K + 1 parts, so
  ceil(log_{K+1} N) search rounds of K evaluations (K = 1: git's ceil(log2 N));
  the endpoints take ceil(2 r / K) rounds, the confirmation ceil(2 r / K) (r: runs
  per commit, `repeats`);
* noise-aware search (probabilistic bisection): each run carries at most the
  capacity C = 1 - H(p) bits of a binary channel that flips a verdict with
  probability p; naming one of N commits with `confidence` takes about
  (log2 N + CONFIDENCE_SHARE * log2(1 / (1 - confidence))) / C runs, the share fitted
  to what scripts/bench_bisect.py measures (N = 64, 12 trials: median 18 evaluations
  at p = 0.1, 34.5 at p = 0.2; this model says 20 and 34). `likelihood = "metric"`
  weighs each run by its value: modeled as p = METRIC_EQUIVALENT_ERROR, with 3
  endpoint runs each. With K slots a round measures K commits: rounds = runs / K.

Phases of one evaluation (seconds): build, launch, warmup, collect, teardown; a
cluster exists from launch to the end of teardown: cluster-hours are the sum of
that over evaluations. `setup` is paid once per bisection in wall time (e.g. the gce
base cluster; a base cluster kept up is up for the whole wall time, not counted here).
Wall time is rounds x (build + cluster time): K slots run side by side. Early
verdicts shorten a bad evaluation's warmup to `early_bad_s`, early good verdicts
(`[run] early_good`) a good one's to `early_good_s`; prefetched builds hide a build
behind the previous warmup (`prefetch_hit` of them).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

METRIC_EQUIVALENT_ERROR = 0.05  # a run weighed by its value, as a verdict's error rate
CONFIDENCE_SHARE = 1 / 3  # of the confidence's bits the posterior pays (fitted, see above)


class PhaseModel(enum.Enum):
    """Where the cost model takes a backend's phase durations from (each backend's
    `BackendInfo.phases`, bisector.backends.registry)."""

    SIMULATED = "simulated"  # the warmup is simulated: an evaluation is all model time
    KUBEMARK_2017 = "kubemark-2017"  # the 2017 kubemark CI job's phases (the gce backend)
    UNKNOWN = "unknown"  # only `[run] estimate` says


@dataclass(frozen=True)
class Phases:
    build_s: float = 0.0
    launch_s: float = 0.0
    warmup_s: float = 0.0
    collect_s: float = 0.0
    teardown_s: float = 0.0
    setup_s: float = 0.0  # once per bisection (a base cluster)

    @property
    def cluster_s(self) -> float:
        """Time a cluster of one evaluation exists: launch to the end of teardown."""
        return self.launch_s + self.warmup_s + self.collect_s + self.teardown_s

    @property
    def evaluation_s(self) -> float:
        return self.build_s + self.cluster_s


# ci-kubernetes-kubemark-gce-scale in June 2017 (docs/cost.md): make quick-release 20-40 min,
# start-kubemark 10-15 min, warmup 30 min, log copy ~2 min, stop-kubemark 5 min. The base
# cluster (kube-up) is paid once; its length is not in the thread: 15 min is an assumption.
KUBEMARK_2017 = Phases(
    build_s=30 * 60,
    launch_s=12 * 60,
    warmup_s=30 * 60,
    collect_s=2 * 60,
    teardown_s=5 * 60,
    setup_s=15 * 60,
)


@dataclass(frozen=True)
class SearchShape:
    """What decides how many evaluations a bisection takes."""

    range_size: int  # commits in good..bad as the search walks them (first parent or all)
    descent_size: float = 1.0  # commits of the merged branch bisected after a merge is found
    repeats: int = 1  # runs per commit (plain search's majority rule)
    error_rate: float = 0.0
    likelihood: str = "verdict"
    confidence: float = 0.99
    parallel: int = 1
    endpoint_runs: int | None = None

    @property
    def noise_aware(self) -> bool:
        return self.error_rate > 0 or self.likelihood == "metric"


@dataclass(frozen=True)
class Expected:
    evaluations: int
    rounds: int


def _log(size: float, base: float) -> int:
    return math.ceil(math.log(size) / math.log(base) - 1e-9) if size > 1 else 0


def _entropy(p: float) -> float:
    if p <= 0 or p >= 1:
        return 0.0
    return -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def expected_search(shape: SearchShape) -> Expected:
    """Expected evaluations and rounds of concurrent evaluations, all phases."""
    k = max(1, shape.parallel)
    if not shape.noise_aware:
        r = shape.repeats
        ends = 2 * (shape.endpoint_runs or r)
        steps = _log(shape.range_size, k + 1) + _log(shape.descent_size, k + 1)
        search = steps * k * r
        rounds = math.ceil(ends / k) + steps * r + math.ceil(2 * r / k)
        return Expected(ends + search + 2 * r, rounds)
    p = shape.error_rate if shape.likelihood == "verdict" else METRIC_EQUIVALENT_ERROR
    capacity = max(1 - _entropy(p), 1e-3)
    ends_each = shape.endpoint_runs or (3 if shape.likelihood == "metric" else shape.repeats)
    ends = 2 * ends_each
    bits = math.log2(max(shape.range_size, 2)) + math.log2(max(shape.descent_size, 1))
    bits += CONFIDENCE_SHARE * math.log2(1 / (1 - shape.confidence))
    search = math.ceil(bits / capacity)
    rounds = math.ceil(ends / k) + math.ceil(search / k) + math.ceil(2 / k)
    return Expected(ends + search + 2, rounds)


@dataclass(frozen=True)
class Cost:
    evaluations: int
    rounds: int
    wall_s: float
    cluster_s: float
    money: float | None  # None: no price given

    @property
    def cluster_hours(self) -> float:
        return self.cluster_s / 3600


def cost(
    expected: Expected,
    phases: Phases,
    *,
    price_per_cluster_hour: float | None = None,
    bad_share: float = 0.0,
    early_bad_s: float | None = None,
    early_good_s: float | None = None,
    prefetch_hit: float = 0.0,
) -> Cost:
    """Wall time, cluster time and money of `expected` evaluations with `phases`.

    `bad_share`: the share of evaluations that are bad (about half in a bisection);
    with `early_bad_s` (early verdicts) their warmup lasts that long. `early_good_s`:
    the warmup of a good evaluation when early good verdicts are on (`[run]
    early_good`: a good search run may end at about twice the time the bad endpoint
    took to pass the threshold); it applies to the other (1 - bad_share) evaluations.
    Like `early_bad_s`, the model does not tell endpoint and confirmation runs (which
    always warm up in full) from search runs: every good evaluation is counted as a
    search run, so with early good verdicts on, this is a lower bound on the warmup.
    Either is capped at the full warmup. `prefetch_hit`: the share of builds hidden
    behind an earlier warmup (0: none, 1: all but the first).
    """
    full = phases.warmup_s
    good_warmup = full if early_good_s is None else min(early_good_s, full)
    bad_warmup = full if early_bad_s is None else min(early_bad_s, full)
    warmup = (1 - bad_share) * good_warmup + bad_share * bad_warmup
    per = replace(phases, warmup_s=warmup)
    build = phases.build_s * (1 - prefetch_hit)
    wall = phases.setup_s + expected.rounds * (build + per.cluster_s)
    if prefetch_hit:
        wall += phases.build_s  # the first build has nothing to hide behind
    cluster = expected.evaluations * per.cluster_s
    money = None
    if price_per_cluster_hour is not None:
        money = round(cluster / 3600 * price_per_cluster_hour, 2)
    return Cost(expected.evaluations, expected.rounds, wall, cluster, money)


def phases_for(
    *, model: PhaseModel, warmup_s: float, estimate_s: float | None, build_s: float | None = None
) -> Phases | None:
    """Phase durations for a run: the 2017 job's, scaled to `[run] estimate` when given.

    With an estimate, the time outside the warmup is split as in the 2017 job (build,
    launch, collect, teardown); without one, the gce backend gets the 2017 job's phases
    and other backends have no known durations (None). `warmup_s` is the run's, except
    for the simulator, whose warmup is simulated: its estimate is all its wall time.
    """
    j = KUBEMARK_2017
    outside = j.build_s + j.launch_s + j.collect_s + j.teardown_s
    if model is PhaseModel.SIMULATED:
        # The simulator's warmup is simulated time: the whole estimate is the model's run.
        return None if estimate_s is None else Phases(warmup_s=estimate_s)
    if estimate_s is not None:
        scale = max(0.0, estimate_s - warmup_s) / outside
        return Phases(
            build_s=j.build_s * scale if build_s is None else build_s,
            launch_s=j.launch_s * scale,
            warmup_s=warmup_s,
            collect_s=j.collect_s * scale,
            teardown_s=j.teardown_s * scale,
        )
    if model is PhaseModel.KUBEMARK_2017:
        return replace(j, warmup_s=warmup_s or j.warmup_s)
    return None


def evaluation_s(*, model: PhaseModel, warmup_s: float, estimate_s: float | None) -> float | None:
    """One evaluation's wall time in the cost model (the ETA's unit); None if unknown."""
    phases = phases_for(model=model, warmup_s=warmup_s, estimate_s=estimate_s)
    return None if phases is None else phases.evaluation_s


# The phases an evaluation spends its time in (bisector.measure.measurement: Measurement.phase_s).
MEASURED_PHASES = ("build", "launch", "warmup", "collect", "teardown")


class MeasuredPhases:
    """Phase times measured in this run, replacing the cost model's guesses as they come in.

    Per phase, the mean of this run's measurements, else the model's guess (`guess`, None:
    no guess). Builds: the run's first build is clean (cold caches), later ones are
    incremental (the same GOCACHE) or waits for a build ahead; coming builds are expected
    as the mean incremental one, else the clean one. Warmups: a search run may end early
    (early verdicts), the endpoints and confirmations run in full: each kind is expected
    from its own measurements (a search run's from the full ones until one is measured).
    """

    def __init__(self, guess: Phases | None = None) -> None:
        self.guess = guess
        self.clean_build: float | None = None
        self.measured: dict[str, list[float]] = {p: [] for p in MEASURED_PHASES}
        self.search_warmups: list[float] = []

    def add(self, phase_s: dict[str, float], *, search: bool) -> None:
        """One evaluation's phase times (`search`: a search run, whose warmup may end early)."""
        for phase, seconds in phase_s.items():
            if phase == "build" and self.clean_build is None:
                self.clean_build = seconds
            elif phase == "warmup" and search:
                self.search_warmups.append(seconds)
            elif phase in self.measured:
                self.measured[phase].append(seconds)

    def expected(self, phase: str, *, search: bool = True) -> float | None:
        """The expected seconds of `phase` in a coming evaluation; None if unknown."""
        if phase == "warmup" and search and self.search_warmups:
            return _mean(self.search_warmups)
        seen = self.measured.get(phase)
        if seen:
            return _mean(seen)
        if phase == "build" and self.clean_build is not None:
            return self.clean_build
        if self.guess is None:
            return None
        guessed: float = getattr(self.guess, f"{phase}_s", 0.0)
        return guessed

    def evaluation_s(self, *, search: bool) -> float | None:
        """One coming evaluation's wall time; None while a phase has neither figure."""
        total = 0.0
        for phase in MEASURED_PHASES:
            seconds = self.expected(phase, search=search)
            if seconds is None:
                return None
            total += seconds
        return total

    def eta_s(self, search_runs: int, other_runs: int) -> float | None:
        """`search_runs` search evaluations and `other_runs` full-length ones (descent
        aside: confirmations, the safety net), one after another."""
        search = self.evaluation_s(search=True) if search_runs else 0.0
        other = self.evaluation_s(search=False) if other_runs else 0.0
        if search is None or other is None:
            return None
        return search_runs * search + other_runs * other


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
