"""The smoking gun: the culprit's run against its parent's, of the run's own metric.

Without a culprit, the bad endpoint against the good one; the confirmation runs when
they can be read, else any run of those commits. What is drawn and compared is the
run's metric: for the node-conflict numbers the apiserver log gives (SEED_LOG_METRICS),
their series over the run's time, one pass over each log (series.read_series); for a
metric read beside the log (a /metrics reading, a process's CPU), its value at the
warmup's start and end and the files it was read from (the evaluation's `sources`).
The log's node numbers are not shown for another metric: 0 against 0 409s read as "no
difference" in a goroutine hunt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisector.errors import BisectorError
from bisector.numbers import NO_VALUE, format_value
from bisector.report.facts import pruned_when, short
from bisector.report.model import Evaluation, Report
from bisector.report.series import SATURATED, RunSeries, read_series
from bisector.report.svg import svg_of

TARGET_BUCKETS = 60
# The apiserver log's node numbers (bisector.logs' scorer): the series and rows below tell
# their story, for a run whose metric is one of them.
SEED_LOG_METRICS = frozenset(
    {
        "conflicts",
        "conflicts_per_min",
        "node_writes",
        "cacher_hwm",
        "cacher_saturated_after_s",
        "dispatch_lag_s",
        "forced_watcher_closes",
    }
)
_NICE_BUCKETS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


@dataclass(frozen=True)
class Side:
    role: str  # "culprit", "parent", "bad endpoint", "good endpoint"
    evaluation: Evaluation
    series: RunSeries | None = None  # the log's series: for SEED_LOG_METRICS only

    @property
    def label(self) -> str:
        return f"{self.role} {short(self.evaluation.commit)} (run #{self.evaluation.n})"


@dataclass(frozen=True)
class SmokingGun:
    sides: list[Side]  # the suspect first
    note: str  # why these two runs, or why nothing could be drawn
    metric: str = "conflicts"  # the run's metric: what is drawn and compared
    threshold: float | None = None

    @property
    def from_log(self) -> bool:
        """The metric is one of the log's node numbers: their series are drawn."""
        return self.metric in SEED_LOG_METRICS


def _logs_present(e: Evaluation) -> bool:
    return bool(e.logs) and all(Path(p).is_file() for p in e.logs if "://" not in p)


def source_of(e: Evaluation, metric: str) -> dict[str, Any]:
    """Where the evaluation's value of `metric` was read ({source, from, at_start}), when
    it was read beside the log; {} for a log metric."""
    sources = e.metrics.get("sources")
    found = sources.get(metric) if isinstance(sources, dict) else None
    return found if isinstance(found, dict) else {}


def pick_run(report: Report, commit: str) -> Evaluation | None:
    """The latest confirmation run of `commit` that can be shown, else its latest such run:
    for a log metric one whose logs exist, for another one with a value."""

    def shown(e: Evaluation) -> bool:
        if report.metric in SEED_LOG_METRICS or not report.metric:
            return _logs_present(e)
        return e.value is not None

    runs = [e for e in report.evaluations if e.commit == commit and shown(e)]
    confirm = [e for e in runs if e.phase == "confirm"]
    chosen = confirm or runs
    return max(chosen, key=lambda e: e.n) if chosen else None


def _pair(report: Report) -> tuple[str, list[tuple[str, str]]]:
    """What the gun compares, and the (role, commit) of each side, the suspect first."""
    if report.culprit is not None:
        pair = [("culprit", report.culprit.commit), ("parent", report.culprit.parent.commit)]
        return "the culprit against its parent", pair
    pair = [("bad endpoint", report.bad.commit), ("good endpoint", report.good.commit)]
    return "no single culprit, so the bad endpoint against the good one", pair


def drawn_runs(report: Report) -> list[Evaluation]:
    """The runs whose logs the smoking gun draws: what pruning keeps."""
    return [e for _, commit in _pair(report)[1] if (e := pick_run(report, commit)) is not None]


def drawn_log_dirs(report: Report) -> set[Path]:
    """The evaluation directories of `drawn_runs`: what `bisector runs --prune` keeps."""
    return {Path(e.eval_dir) for e in drawn_runs(report) if e.eval_dir}


def smoking_gun(report: Report) -> SmokingGun:
    what, pair = _pair(report)
    metric = report.metric or "conflicts"
    from_log = metric in SEED_LOG_METRICS
    sides = []
    missing = []
    for role, commit in pair:
        e = pick_run(report, commit)
        if e is None:
            missing.append(f"{role} {short(commit)}")
            continue
        if not from_log:
            sides.append(Side(role, e))
            continue
        try:
            sides.append(Side(role, e, read_series(e.logs)))
        except Exception as exc:  # a garbled log must not cost the whole report
            why = str(exc) if isinstance(exc, BisectorError | OSError) else repr(exc)
            missing.append(f"{role} {short(commit)} ({why})")
    if from_log:
        note = f"{what}, from their runs' apiserver logs"
        if missing:
            note += "; no readable log for " + ", ".join(missing)
            if report.pruned is not None:
                note += f" (the logs were pruned {pruned_when(report.pruned)})"
    else:
        kinds = sorted({str(source_of(s.evaluation, metric).get("source", "")) for s in sides})
        read = f" ({' and '.join(k for k in kinds if k)} readings)" if any(kinds) else ""
        note = f"{what}: the run's metric {metric}{read}"
        if missing:
            note += "; no measured run of " + ", ".join(missing)
    return SmokingGun(sides, note, metric, report.threshold.value)


def bucket_seconds(seconds: int) -> int:
    """A round bucket size giving about TARGET_BUCKETS points over the run."""
    for size in _NICE_BUCKETS:
        if seconds / size <= TARGET_BUCKETS:
            return size
    return _NICE_BUCKETS[-1]


_COLOURS = ("#c62828", "#2e7d32")  # the suspect red, the reference green


def _window_marks(ax: Any, side: Side, colour: str) -> None:
    """The part of the log the value was read from, when it is not the whole log."""
    if side.series is None:
        return
    w, t0 = side.evaluation.window, side.series.t0
    if w is None or w.start is None or w.end is None or t0 is None:
        return
    start, end, last = w.start - t0, w.end - t0, side.series.seconds
    # Only inside the log's own span: a window from another clock would stretch the axis.
    if 0.5 < start < last:
        ax.axvline(start / 60, color=colour, lw=0.8, ls=":", alpha=0.7)
    if 0 < end < last - 0.5:
        ax.axvline(end / 60, color=colour, lw=0.8, ls=":", alpha=0.7)


def gun_svg(gun: SmokingGun) -> str | None:
    sides = gun.sides
    if not sides:
        return None
    if not gun.from_log:
        return _metric_svg(gun)
    series = [s.series for s in sides if s.series is not None]
    seconds = max(s.seconds for s in series)
    bucket = bucket_seconds(seconds)
    panels = []
    if any(s.conflicts.any() for s in series):
        panels.append(("conflicts", "node PATCH 409 conflicts / min"))
    if any(s.writes.any() for s in series):
        panels.append(("writes", "successful node writes / min"))
    if any(s.cacher for s in series):
        panels.append(("cacher", "node cacher: objects queued\n(highest so far)"))
    if not panels:
        return None

    def draw(fig: Any) -> None:
        from matplotlib.ticker import FuncFormatter

        fig.set_layout_engine("constrained")
        axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (kind, title) in zip(axes, panels, strict=True):
            for i, side in enumerate(sides):
                colour = _COLOURS[i % len(_COLOURS)]
                _series_line(ax, side, kind, bucket, colour)
                _window_marks(ax, side, colour)
            if kind == "cacher":
                ax.axhline(SATURATED, color="#555", lw=0.8, ls="--")
                ax.annotate(
                    "saturated (channel holds 100)",
                    (0, SATURATED),
                    xytext=(2, -10),
                    textcoords="offset points",
                    fontsize=7,
                    color="#555",
                )
            ax.set_ylabel(title, fontsize=8)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.grid(alpha=0.25)
        axes[0].legend(loc="upper left", fontsize=8, frameon=False, ncol=2)
        axes[-1].set_xlabel(f"minutes since the run's first log line (buckets of {bucket}s)")

    return svg_of(draw, 10, 1.2 + 1.5 * len(panels))


def _series_line(ax: Any, side: Side, kind: str, bucket: int, colour: str) -> None:
    series, label = side.series, side.label
    if series is None:
        return
    if kind == "cacher":
        if not series.cacher:
            return
        xs, ys, high = [], [], 0
        for second in sorted(series.cacher):
            high = max(high, series.cacher[second])
            xs.append(second / 60)
            ys.append(high)
        xs.append(series.seconds / 60)
        ys.append(high)
        ax.step(xs, ys, where="post", color=colour, lw=1.5, label=label)
        return
    counts = series.conflicts if kind == "conflicts" else series.writes
    starts, per_min = series.per_minute(counts, bucket)
    if not len(starts):
        return
    # The last bucket drawn to its end, not only its start.
    xs = [*(starts / 60), (starts[-1] + bucket) / 60]
    ys = [*per_min, per_min[-1]]
    ax.step(xs, ys, where="post", color=colour, lw=1.5, label=label)


def metric_points(side: Side, metric: str) -> list[tuple[float, float]]:
    """The run's metric over its warmup: (minutes, value) at its start (when the reading
    has one) and at its end (the evaluation's value)."""
    e = side.evaluation
    if e.value is None:
        return []
    span = e.window.span_s if e.window is not None and e.window.span_s > 0 else 60.0
    start = source_of(e, metric).get("at_start")
    points = [(0.0, float(start))] if isinstance(start, int | float) else []
    return [*points, (span / 60, e.value)]


def _metric_svg(gun: SmokingGun) -> str | None:
    """One panel: the run's metric of each side, from the warmup's start to its end."""
    drawn = [(side, metric_points(side, gun.metric)) for side in gun.sides]
    if not any(points for _, points in drawn):
        return None

    def draw(fig: Any) -> None:
        from matplotlib.ticker import FuncFormatter

        fig.set_layout_engine("constrained")
        ax = fig.subplots()
        for i, (side, points) in enumerate(drawn):
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            colour = _COLOURS[i % len(_COLOURS)]
            ax.plot(xs, ys, color=colour, lw=1.5, marker="o", label=side.label)
        if gun.threshold is not None:
            ax.axhline(gun.threshold, color="#ef6c00", ls="--", lw=1, label="threshold")
        ax.set_ylabel(gun.metric, fontsize=8)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.4g}"))
        ax.grid(alpha=0.25)
        ax.legend(loc="upper left", fontsize=8, frameon=False, ncol=3)
        ax.set_xlabel("minutes into the warmup: its start and its end (the value read)")

    return svg_of(draw, 10, 3.0)


def _node(value: object) -> float | None:
    if isinstance(value, dict):
        for kind in ("*api.Node", "*core.Node", "*v1.Node", "nodes"):
            if value.get(kind) is not None:
                return float(value[kind])
        return None
    return float(value) if isinstance(value, int | float) else None


# (label, how to read it from an evaluation's metrics) - the scorer's own numbers, each
# written as its metric's unit asks (bisector.numbers).
_ROWS: list[tuple[str, Any]] = [
    ("node PATCH 409 conflicts", lambda m: format_value(_node(m.get("conflicts")), "conflicts")),
    (
        "conflicts per minute",
        lambda m: format_value(_node(m.get("conflicts_per_min")), "conflicts_per_min"),
    ),
    ("successful node writes", lambda m: format_value(_node(m.get("node_writes")), "node_writes")),
    (
        "node cacher high-water mark",
        lambda m: format_value(_node(m.get("cacher_hwm")), "cacher_hwm"),
    ),
    (
        "node cacher saturated after",
        lambda m: (
            "never"
            if isinstance(m.get("cacher_saturated_after_s"), dict)
            and _node(m["cacher_saturated_after_s"]) is None
            else format_value(_node(m.get("cacher_saturated_after_s")), "cacher_saturated_after_s")
        ),
    ),
    (
        "dispatch lag (max)",
        lambda m: format_value(
            m["dispatch_lag_s"].get("max") if isinstance(m.get("dispatch_lag_s"), dict) else None,
            "dispatch_lag_s",
        ),
    ),
    (
        "forced watcher closes (nodes)",
        lambda m: format_value(_node(m.get("forced_watcher_closes")), "forced_watcher_closes"),
    ),
]


def comparison(gun: SmokingGun) -> tuple[list[str], list[list[str]]]:
    """Header and rows: the run's metric of the two runs side by side, with its readings;
    for a log node number, each of the scorer's node numbers."""
    header = ["", *(side.label for side in gun.sides)]
    if not gun.from_log:
        return header, _metric_rows(gun)
    rows = []
    for label, read in _ROWS:
        cells = [read(side.evaluation.metrics) for side in gun.sides]
        if any(cell not in (NO_VALUE, "never") for cell in cells):
            rows.append([label, *cells])
    return header, rows


def _metric_rows(gun: SmokingGun) -> list[list[str]]:
    metric, sides = gun.metric, gun.sides
    rows = [[metric, *(format_value(s.evaluation.value, metric) for s in sides)]]
    sources = [source_of(s.evaluation, metric) for s in sides]
    starts = [src.get("at_start") for src in sources]
    if any(isinstance(v, int | float) for v in starts):
        rows.append(
            [
                "at the warmup's start",
                *(format_value(v if isinstance(v, int | float) else None, metric) for v in starts),
            ]
        )
    if any(src.get("from") for src in sources):
        rows.append(["read from", *(_where(str(src.get("from", ""))) for src in sources)])
    return rows


def _where(text: str) -> str:
    """`/run/evals/012/logs/metrics-before.prom -> .../metrics-after.prom go_goroutines` as
    the files' names and what was read."""
    return " ".join(Path(part).name if "/" in part else part for part in text.split())
