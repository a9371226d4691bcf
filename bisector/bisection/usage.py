"""The report's cost section: the cost model's figures beside what the run used.

The model's side is `plan.estimate`, the same function `--dry-run` prints, applied to
the run's own settings and range: once before the run (`[run] estimate`, as `--dry-run`
said it), and again with the phase times the run measured (what every estimate says
once phases are measured: the model's evaluations and rounds, this run's phases). The
measured side comes from the run's measurements:

* evaluations: every measurement this run made (skips too: they held a cluster);
  measurements reused from the cache were paid for by an earlier run.
* wall time: the union of the evaluations' intervals (start, start + duration), i.e.
  while at least one evaluation ran. Not the first start to the last end: a resumed
  run's pause between its sessions is not time the bisection used. Journal records
  carry no times, so the measurements' own are the source.
* cluster time: a cluster exists from launch to the end of teardown (bisector.cost).
  A measurement keeps only `duration_s`, from its start (the build, and the wait for a
  prefetched build) to the end of its teardown. The launch step's command log
  (evals/NNN/launch.log, written by bisector.proclog) stamps when its first command
  started, to the second: the cluster time is from there to the end of the
  evaluation. Without that log (a backend that runs no launch command, like the
  in-process simulator) the whole duration is counted, build included, and said so
  (`counted_whole`); an evaluation that never got to launch held no cluster.
"""

from __future__ import annotations

from pathlib import Path

from bisector import proclog
from bisector.bisection.plan import Estimate
from bisector.cost import MeasuredPhases, Phases
from bisector.measure.measurement import Measurement
from bisector.report.model import CostSummary, MeasuredCost, ModelCost, ModelPhases

LAUNCH_LOG = "launch.log"


def launch_started_at(eval_dir: Path) -> float | None:
    """Epoch seconds the evaluation's first launch command started, from its command log."""
    try:
        with (eval_dir / LAUNCH_LOG).open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                when = proclog.started_at(line)
                if when is not None:
                    return when
    except OSError:
        return None
    return None


def cluster_time(m: Measurement) -> tuple[float, bool]:
    """(seconds m held a cluster, whether that is its whole duration for want of a launch log)."""
    if m.launch_attempts == 0:
        return 0.0, False  # the build (or what came before the launch) failed: no cluster
    launched = launch_started_at(Path(m.eval_dir)) if m.eval_dir else None
    if launched is None:
        return m.duration_s, True
    end = m.started_at + m.duration_s
    # The stamp is cut to the second and the clocks may differ a little: keep it inside
    # the evaluation.
    held = end - max(launched, m.started_at)
    return min(max(held, 0.0), m.duration_s), False


def busy_s(measurements: list[Measurement]) -> float:
    """Length of the union of the measurements' intervals (parallel slots overlap)."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted((m.started_at, m.started_at + m.duration_s) for m in measurements):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _money(cluster_s: float, price: float | None) -> float | None:
    return None if price is None else round(cluster_s / 3600 * price, 2)


def model_cost(model: Estimate) -> ModelCost:
    costed, phases = model.cost, model.phases
    return ModelCost(
        evaluations=model.expected.evaluations,
        rounds=model.expected.rounds,
        basis=model.basis,
        phases=None
        if phases is None
        else ModelPhases(
            phases.build_s,
            phases.launch_s,
            phases.warmup_s,
            phases.collect_s,
            phases.teardown_s,
            phases.setup_s,
        ),
        wall_s=None if costed is None else costed.wall_s,
        cluster_s=None if costed is None else costed.cluster_s,
        cluster_hours=None if costed is None else costed.cluster_hours,
        money=None if costed is None else costed.money,
    )


def measured_cost(
    own: list[Measurement], reused: int, price: float | None, earlier: int = 0
) -> MeasuredCost:
    """What the measurements `own` (this run's) used; `reused`: cached ones it took;
    `earlier`: how many of `own` an earlier session of the run directory measured."""
    held = [cluster_time(m) for m in own]
    cluster = sum(seconds for seconds, _ in held)
    return MeasuredCost(
        evaluations=len(own),
        reused=reused,
        wall_s=busy_s(own),
        cluster_s=cluster,
        cluster_hours=cluster / 3600,
        counted_whole=sum(whole for _, whole in held),
        money=_money(cluster, price),
        earlier=earlier,
    )


def measured_phases(own: list[Measurement], guess: Phases | None = None) -> Phases | None:
    """The phase times the measurements `own` took, as the cost model's per-evaluation
    phases (bisector.cost.MeasuredPhases, as the live ETA reads them); None when none
    has any (measured before the phases were kept, or nothing measured)."""
    times = MeasuredPhases(guess)
    for m in own:
        if m.phase_s:
            times.add(m.phase_s, search=m.phase == "bisect")
    return times.phases()


def cost_summary(
    model: Estimate,
    own: list[Measurement],
    reused: int,
    price: float | None,
    earlier: int = 0,
    *,
    remodel: Estimate | None = None,
) -> CostSummary:
    """The model before the run (`model`, as --dry-run), the same model with this run's
    measured phase times (`remodel`, None when none were measured), and what was used."""
    return CostSummary(
        price,
        model_cost(model),
        measured_cost(own, reused, price, earlier),
        None if remodel is None else model_cost(remodel),
    )
