"""The `sim` backend: evaluates a commit on the built-in kubemark simulator.

The candidate's tree decides what the apiserver does (its profile file, the
analogue of the cacher code); the run decides the cluster (nodes, simulated
duration, seed, noise). build = read and validate the profile (missing or
invalid: BuildError, hence skip); launch = create the simulated master's disk;
warmup = run the model for the simulated duration, which writes the master's
kube-apiserver.log; collect = move that log into the candidate's log dir.

Early verdicts (`PartialLogs`): `warmup_steps` runs the model in steps of
simulated time and `peek` is the master's log as written so far; when the
caller stops early, `collect` ends the model there (the log covers that much).
Prefetched builds (`PrefetchBuilds`): `prefetch_build` reads and validates the
profile of another checkout ahead of time; `build` of that commit then uses it.

`[backends.sim]` keys:
profile  path of the profile inside the candidate's tree (default hack/kubemark-sim.toml)
nodes    hollow nodes (default 5000)
duration simulated cluster time the log covers (default: the run's warmup)
noise    sigma of the per-run cost jitter, also the rate of rare dispatcher stalls (0)
seed     base seed; each evaluation derives its own from it, the commit and its dir
ramp     how long the hollow nodes take to register (default 60s, at most duration/2)
watchers extra node watches on names of nodes not in the cluster (a load generator's, as the
         procs backend opens them; default 0)
status_period  the hollow kubelets' status period (default: the tree profile's, 10s)
npd      whether a node-problem-detector writes each node too (default true; procs has none)
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Generator
from dataclasses import asdict, dataclass
from pathlib import Path

from bisector.backends.base import BackendContext, BackendTraits, Candidate
from bisector.config import DEFAULTS, Section, example_setting, keys_of, read_settings, setting
from bisector.durations import format_duration
from bisector.errors import BuildError, CollectError, ConfigError, LaunchError
from bisector.sim import (
    ProfileError,
    RunParams,
    SimProfile,
    SimRun,
    SimSummary,
    load_profile,
    simulate,
)

DEFAULT_PROFILE = "hack/kubemark-sim.toml"
# Bounds past any real use: 1e9 nodes fill memory before the first log line, a noise of
# 1000 overflows exp() in the middle of a run (an internal error after clusters are paid
# for), 1e20 watchers read 0 conflicts at both endpoints. Kubernetes' documented limit is
# 5,000 nodes (kubernetes/website, docs/setup/best-practices/cluster-large.md).
MAX_NODES = 100_000
MAX_NOISE = 2.0
MAX_WATCHERS = 1 << 20  # as [backends.procs] watchers (fs.nr_open)


@dataclass(frozen=True)
class SimSettings:
    """`[backends.sim]`: every key declared once (bisector.config.setting)."""

    profile: str = setting("str", DEFAULT_PROFILE, "the tree's simulator profile")
    nodes: int = setting(
        "int", 5000, "simulated hollow nodes", low=1, high=MAX_NODES,
        why="the model holds every node in memory; Kubernetes supports 5,000",
    )  # fmt: skip
    duration: float | None = setting("duration", None, "simulated warmup (default: the run's)")
    noise: float = setting(
        "float", 0.0, "relative noise of each run", low=0, high=MAX_NOISE,
        why="the sigma of each run's log cost: 2 is already a 7x spread",
    )  # fmt: skip
    seed: int | None = setting("int", None, "the model's seed (default: the run's)")
    ramp: float = setting("duration", "60s", "how long the nodes take to register")
    watchers: int = setting(
        "int", 0, "extra node watches", low=0, high=MAX_WATCHERS,
        why="the procs backend's bound, whose watches these model",
    )  # fmt: skip
    status_period: float | None = setting(
        "duration", None, "node status interval (default: the profile's)", above=0
    )
    npd: bool = setting("bool", True, "node-problem-detector's writes")


KEYS = keys_of(SimSettings)
# Wall seconds of one evaluation (build to teardown) per simulated hollow node and second,
# on one core: the demo's CPU time over the node-seconds it simulated (docs/simulator.md,
# "What an evaluation costs"). The bad profile writes more log and runs above it, the
# good below: an estimate, never a promise.
SECONDS_PER_NODE_SECOND = 3.3e-6
LOG_NAME = "kube-apiserver.log"


def _run_hint(section: Section) -> str:
    """Where `[run] warmup` is set in an example, said as `Section.hint` says it."""
    return Section(file=section.file, path="run").hint("warmup")


def _example(dotted: str) -> str:
    return example_setting(dotted) or "configs/local-example.toml"


def evaluation_estimate_s(section: Section, warmup_s: float) -> float:
    """One evaluation's wall time for the cluster `section` simulates (its nodes for its
    duration, else the run's warmup)."""
    cfg = read_settings(SimSettings, section)
    duration_s = cfg.duration if cfg.duration is not None else warmup_s
    return SECONDS_PER_NODE_SECOND * cfg.nodes * duration_s


class SimBackend:
    KEYS = KEYS
    name = "sim"

    @property
    def traits(self) -> BackendTraits:
        # Each evaluation's log is simulated here, fresh, into its own directory: it cannot
        # be another launch's (its 2017 clock says nothing of that). Its warmup is the
        # simulated duration, which may differ from [run] warmup.
        return BackendTraits(own_logs=True, warmup_s=self.duration_s)

    def __init__(self, context: BackendContext) -> None:
        section = context.section
        cfg = read_settings(SimSettings, section)
        self.profile_path = cfg.profile
        self.nodes = cfg.nodes
        self.duration_s = cfg.duration if cfg.duration is not None else context.warmup_s
        self.noise = cfg.noise
        self.seed = cfg.seed if cfg.seed is not None else context.seed
        self.ramp_s = cfg.ramp
        self.watchers = cfg.watchers
        self.status_period_s = cfg.status_period
        self.npd = cfg.npd
        if self.duration_s <= 0:
            table = f"[{section.path or 'backends.sim'}]"
            shown = "no --config FILE given" if section.file == DEFAULTS else section.file
            raise ConfigError(
                f"{shown}: {table} needs a simulated duration: set `duration` there or "
                f"`warmup` in [run]{_run_hint(section)}"
            )
        self._profiles: dict[Path, SimProfile] = {}
        self._prefetched: dict[str, SimProfile] = {}  # commit -> profile read ahead
        self._runs: dict[Path, SimRun] = {}  # eval dir -> a model run in steps
        self.summaries: dict[Path, SimSummary] = {}

    def _master(self, candidate: Candidate) -> Path:
        """Where the simulated master keeps its log while it "runs"."""
        return candidate.eval_dir / "sim-master"

    def run_seed(self, candidate: Candidate) -> int:
        """Deterministic per run seed, commit and evaluation (repeats differ under noise)."""
        text = f"{self.seed}:{candidate.commit}:{candidate.eval_dir.name}"
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")

    def params(self, candidate: Candidate) -> RunParams:
        return RunParams(
            nodes=self.nodes,
            duration_s=self.duration_s,
            seed=self.run_seed(candidate),
            noise=self.noise,
            ramp_s=min(self.ramp_s, self.duration_s / 2),
            git_version=f"v1.7.0-beta.0+{candidate.commit[:14]}",
            commit=candidate.commit,
            extra_watchers=self.watchers,
            status_period_s=self.status_period_s,
            npd=self.npd,
        )

    def setup(self) -> None:
        """Nothing is shared between candidates."""

    def _load(self, worktree: Path) -> SimProfile:
        path = worktree / self.profile_path
        if not path.is_file():
            raise BuildError(
                f"no simulator profile {self.profile_path} in this commit: the sim backend (the "
                "default without --config) runs only histories made by `bisector demo`; for "
                "your own repository pass --config FILE naming a backend "
                f"({_example('backends.local.launch')} is one)"
            )
        try:
            return load_profile(path)
        except ProfileError as exc:
            raise BuildError(f"{exc} (the sim backend's build)") from None

    def build(self, candidate: Candidate) -> None:
        profile = self._prefetched.pop(candidate.commit, None)
        self._profiles[candidate.eval_dir] = profile or self._load(candidate.worktree)

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        """Read `commit`'s profile from `worktree` now; its `build` takes it from here."""
        self._prefetched[commit] = self._load(worktree)

    def prefetched(self, commit: str) -> bool:
        return commit in self._prefetched

    def launch(self, candidate: Candidate) -> None:
        if candidate.eval_dir not in self._profiles:
            raise LaunchError(f"no built profile for {candidate.commit[:12]}: build first")
        master = self._master(candidate)
        shutil.rmtree(master, ignore_errors=True)
        master.mkdir(parents=True)

    def warmup(self, candidate: Candidate) -> None:
        master = self._master(candidate)
        if not master.is_dir():
            raise LaunchError("the simulated cluster was not launched")
        summary = simulate(
            self._profiles[candidate.eval_dir], self.params(candidate), master / LOG_NAME
        )
        self.summaries[candidate.eval_dir] = summary
        (candidate.eval_dir / "sim-summary.json").write_text(
            json.dumps(asdict(summary), indent=2) + "\n", encoding="utf-8"
        )

    def warmup_steps(self, candidate: Candidate, every_s: float) -> Generator[float, None, None]:
        """The model in steps of `every_s` simulated seconds; the log is on disk at each."""
        master = self._master(candidate)
        if not master.is_dir():
            raise LaunchError("the simulated cluster was not launched")
        run = SimRun(self._profiles[candidate.eval_dir], self.params(candidate), master / LOG_NAME)
        self._runs[candidate.eval_dir] = run
        every_s = max(every_s, 1.0)
        while not run.done:
            run.advance(run.elapsed_s + every_s)
            yield run.elapsed_s

    def peek(self, candidate: Candidate) -> list[Path]:
        log = self._master(candidate) / LOG_NAME
        if candidate.eval_dir not in self._runs or not log.is_file():
            raise CollectError("the simulated master has no log yet")
        return [log]

    def _end_run(self, candidate: Candidate) -> None:
        """A run in steps ends where the caller stopped it (or at its end)."""
        run = self._runs.pop(candidate.eval_dir, None)
        if run is None:
            return
        summary = run.stop()
        self.summaries[candidate.eval_dir] = summary
        (candidate.eval_dir / "sim-summary.json").write_text(
            json.dumps(asdict(summary), indent=2) + "\n", encoding="utf-8"
        )

    def collect(self, candidate: Candidate) -> list[Path]:
        self._end_run(candidate)
        source = self._master(candidate) / LOG_NAME
        if not source.is_file():
            raise CollectError(f"the simulated master has no {LOG_NAME}: warmup did not run")
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        target = candidate.log_dir / LOG_NAME
        shutil.move(source, target)
        return [target]

    def teardown(self, candidate: Candidate) -> None:
        run = self._runs.pop(candidate.eval_dir, None)
        if run is not None:
            run.stop()  # closes the log file before its directory goes
        shutil.rmtree(self._master(candidate), ignore_errors=True)
        self._profiles.pop(candidate.eval_dir, None)

    def close(self) -> None:
        """Nothing to release."""

    def plan(self, candidate: Candidate) -> list[str]:
        profile = candidate.worktree / self.profile_path
        noise = f", noise {self.noise:g}" if self.noise else ""
        return [
            f"build: read the simulator profile {profile} (missing or invalid: skip)",
            f"launch+warmup: simulate {self.nodes} hollow nodes for "
            f"{format_duration(self.duration_s)} of cluster time (seed {self.seed}{noise})",
            f"collect: write {candidate.log_dir / LOG_NAME}",
        ]
