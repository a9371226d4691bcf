"""The cost section's words and figures, shared by report.md, report.html and the summary.

Two columns that must not be confused: the cost model's expectation (bisector.cost,
what `--dry-run` printed) and what the run measured. Where the model has no phase
durations, its cells say so instead of showing a number.
"""

from __future__ import annotations

from dataclasses import dataclass

from bisector.durations import format_duration
from bisector.report.model import CostSummary, EtaCheck, ModelCost, ModelPhases
from bisector.report.wording import counted_whole_plain

MODEL_HEADER = "model (expected before the run)"
MODEL_MEASURED_HEADER = "model (this run's phase times)"
MEASURED_HEADER = "measured (this run)"
NO_ESTIMATE = "no estimate"


@dataclass(frozen=True)
class CostRow:
    label: str
    model: str
    measured: str


def hours_text(hours: float) -> str:
    """Cluster-hours with enough digits to be seen: 0.0042, 6.54, 123.4."""
    return f"{hours:.1f}" if hours >= 100 else f"{hours:.3g}"


def money_text(money: float) -> str:
    return f"{money:.2f}"


def _or_none(value: float | None, text: str) -> str:
    return NO_ESTIMATE if value is None else text


def model_header(cost: CostSummary) -> str:
    """The model column's name: with this run's phase times once it has them."""
    return MODEL_MEASURED_HEADER if cost.model_measured_phases is not None else MODEL_HEADER


def cost_rows(cost: CostSummary) -> list[CostRow]:
    model, measured = cost.expected, cost.measured
    reused = f" (+{measured.reused} reused from earlier runs)" if measured.reused else ""
    rows = [
        CostRow(
            "evaluations",
            f"{model.evaluations} in {model.rounds} rounds",
            f"{measured.evaluations}{reused}",
        ),
        CostRow(
            "wall time",
            _or_none(model.wall_s, format_duration(model.wall_s or 0.0)),
            format_duration(measured.wall_s),
        ),
        CostRow(
            "cluster time",
            _or_none(model.cluster_s, format_duration(model.cluster_s or 0.0)),
            format_duration(measured.cluster_s),
        ),
        CostRow(
            "cluster-hours",
            _or_none(model.cluster_hours, hours_text(model.cluster_hours or 0.0)),
            hours_text(measured.cluster_hours),
        ),
    ]
    if cost.price_per_cluster_hour is not None:
        rows.append(
            CostRow(
                f"money at {cost.price_per_cluster_hour:g} per cluster-hour",
                _or_none(model.money, money_text(model.money or 0.0)),
                money_text(measured.money or 0.0),
            )
        )
    return rows


def phases_text(phases: ModelPhases) -> str:
    parts = [
        f"build {format_duration(phases.build_s)}",
        f"launch {format_duration(phases.launch_s)}",
        f"warmup {format_duration(phases.warmup_s)}",
        f"collect {format_duration(phases.collect_s)}",
        f"teardown {format_duration(phases.teardown_s)}",
    ]
    if phases.setup_s:
        parts.append(f"setup once {format_duration(phases.setup_s)}")
    return ", ".join(parts)


def cost_notes(cost: CostSummary, backend: str) -> list[str]:
    """What each column is and where its figures come from."""
    model, measured = cost.expected, cost.measured
    if cost.model_measured_phases is not None and model.phases is not None:
        first = (
            "The model's figures are bisector.cost's, from this run's settings and range "
            "(its evaluations and rounds, as `bisector run --dry-run` counts them) with one "
            f"evaluation as this run measured it: {phases_text(model.phases)}. "
            + _before_text(cost.model)
        )
    elif model.phases is None:
        first = (
            "The model (bisector.cost, from this run's settings and range, as "
            "`bisector run --dry-run` prints it) counts evaluations and rounds but has no "
            f"estimate of time, cluster-hours or money: {model.basis}."
        )
    else:
        first = (
            "The model's figures are bisector.cost's, from this run's settings and range, as "
            f"`bisector run --dry-run` prints them; one evaluation: {phases_text(model.phases)} "
            f"({model.basis}). Its wall time includes the setup; its cluster time runs from "
            "launch to the end of teardown."
        )
    notes = [
        first,
        "Measured: evaluations this run made, skips included (reused ones were paid for by "
        "an earlier run); wall time while at least one evaluation ran; cluster time from "
        "each evaluation's first launch command to the end of its teardown.",
    ]
    if measured.counted_whole:
        notes.append(
            f"{measured.counted_whole} of {measured.evaluations} evaluations have no launch "
            f"command log (the {backend} backend runs no launch command): their cluster time "
            "is their whole duration, build included."
        )
    if cost.price_per_cluster_hour is None:
        notes.append("No money figures: set [run] price_per_cluster_hour to see them.")
    return notes


def _before_text(before: ModelCost) -> str:
    """What the model said before the run, from the settings' phase times."""
    if before.wall_s is None or before.phases is None:
        return f"Before the run it had no time figures ({before.basis})."
    return (
        f"Before the run ({before.basis}: {phases_text(before.phases)}) it said wall "
        f"{format_duration(before.wall_s)}."
    )


def eta_text(eta: EtaCheck) -> str:
    """The ETA said when the search began against the wall time the run took."""
    took = f"the run took {format_duration(eta.actual_s)}"
    if eta.predicted_s is None or eta.predicted_at_s is None:
        return (
            "time: no ETA was said when the search began (no phase times measured in this "
            f"session nor modeled, or nothing left to measure); {took}"
        )
    ratio = eta.actual_s / eta.predicted_s if eta.predicted_s > 0 else 0.0
    return (
        f"time: predicted {format_duration(eta.predicted_s)} when the search began "
        f"({format_duration(eta.predicted_at_s)} in, ETA "
        f"{format_duration(eta.predicted_s - eta.predicted_at_s)}); {took} "
        f"({ratio:.2f}x the prediction)"
    )


def cost_summary_lines(cost: CostSummary) -> list[str]:
    """Two lines for the end-of-run summary: the model's expectation, then what was used."""
    model, measured = cost.expected, cost.measured
    price = cost.price_per_cluster_hour is not None
    whose = "expected" if cost.model_measured_phases is None else "this run's phase times"
    expected = f"cost, model ({whose}): {model.evaluations} evaluations in {model.rounds} rounds"
    if model.wall_s is None or model.cluster_hours is None:
        expected += f"; no estimate of time or cluster-hours ({model.basis})"
    else:
        expected += (
            f", wall {format_duration(model.wall_s)}, "
            f"{hours_text(model.cluster_hours)} cluster-hours"
        )
        if price and model.money is not None:
            expected += f", money {money_text(model.money)}"
    before = cost.model
    if cost.model_measured_phases is not None and before.wall_s is not None:
        expected += f" (before the run: wall {format_duration(before.wall_s)})"
    reused = f" (+{measured.reused} reused)" if measured.reused else ""
    if measured.earlier:  # a resumed (or rerun) run: say what this session itself measured
        now = measured.evaluations - measured.earlier
        reused += (
            ", none measured now (all by an earlier session of this run directory)"
            if now == 0
            else f", {now} measured now and {measured.earlier} by an earlier session"
        )
    used = (
        f"cost, measured (this run): {measured.evaluations} evaluations{reused}, "
        f"wall {format_duration(measured.wall_s)}, "
        f"{hours_text(measured.cluster_hours)} cluster-hours"
    )
    if price and measured.money is not None:
        used += f", money {money_text(measured.money)}"
    if measured.counted_whole:
        used += f" ({counted_whole_plain(measured.counted_whole)})"
    return [expected, used]
