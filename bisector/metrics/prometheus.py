"""The `prometheus` source: a process's `/metrics` read twice, at the warmup's start and end.

The process is the metric's target: the apiserver, etcd (its client URL serves /metrics),
or another control-plane process a backend snapshots.

Parsing is `prometheus_client`'s text parser (label escaping, `# TYPE` lines, histograms,
summaries, untyped samples); this module only does what PromQL would do over the window
between the two snapshots:

- counter increase: `sum(after - before)` over the series the labels select; a series
  missing from the first snapshot counts from 0 (the apiserver creates a series at its
  first event); none at all in either is no value (absent is not zero: the commits
  before the one that added the metric print nothing either), unless the metric
  declares that absence means none happened (`absent = "zero"`: a `CounterVec` with
  no child prints nothing);
- histogram quantile: `histogram_quantile(q, sum by (le) (after_bucket - before_bucket))`,
  computed as Prometheus computes it (promql/quantile.go `BucketQuantile`: buckets sorted
  by `le`, coalesced, forced monotonic, linear interpolation inside the bucket, the second
  highest bound when the rank falls in `+Inf`); no observation in the window is no value;
- summary quantile: the apiserver's own estimate in the second snapshot (its sliding
  window, e.g. 1 h for 2017's `apiserver_request_latencies_summary`), summed series refused;
- gauge: the selected series' values in the second snapshot, summed (etcd's
  `etcd_debugging_mvcc_watcher_total`, `go_goroutines`); none selected is no value;
- series: how many series of a name the labels select in the second snapshot (one per
  watched resource, per client ...); for both, none is no value (absent is not zero)
  unless the metric declares `absent = "zero"`;
- series matching: `count({__name__=~"PATTERN", labels})` in the second snapshot: the
  series of every sample name the pattern matches whole (as PromQL anchors `=~`), what
  `curl /metrics | grep -c` counts: a leak that registers numbered families
  (`reflector_<name>_<N>_...`) adds families no exact name names; `.+` is the page's
  every series. None matching is no value unless `absent = "zero"`.

Label matching is PromQL's: every selector label must equal the series' label, and a label
the series lacks reads as "". So `{resource="nodes"}` selects `{resource}` (2017),
`{group,resource}` and `{group,resource,reason}` series alike, summed; `{group=""}` also
selects series that have no `group` at all.

A snapshot is garbled (does not parse, or holds a series twice: two pages in one file),
empty, or not a process's page (no `process_start_time_seconds`): no value. A selected series
of the first snapshot missing from the second (a page cut short), or two identical
snapshots (one page read twice: a live apiserver's page always moves), is no value either. The
process restarted between the snapshots (`process_start_time_seconds` changed, or a counter
went down): no value either; Prometheus' `increase()` would count the second reading
alone, a lower bound that can read as good.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bisector.errors import CollectError
from bisector.inputs import open_input

START_TIME = "process_start_time_seconds"
MAX_SNAPSHOT_BYTES = 256 << 20  # a 5000-node apiserver's /metrics is tens of MiB
# Unit of a family from its name's suffix, else from its HELP text (2017's
# apiserver_request_latencies says "in microseconds" and has no suffix).
UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_SUFFIX_UNITS = (("_seconds", "s"), ("_milliseconds", "ms"), ("_microseconds", "us"))
_HELP_UNITS = (("in seconds", "s"), ("in milliseconds", "ms"), ("in microseconds", "us"))


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Snapshot:
    """One `/metrics` read: its samples by name, and each family's type and help."""

    path: str
    samples: Mapping[str, tuple[Sample, ...]]
    types: Mapping[str, str]  # sample name -> family type (counter, histogram, ...)
    helps: Mapping[str, str]  # sample name -> HELP text

    def of(self, name: str) -> tuple[Sample, ...]:
        return self.samples.get(name, ())

    @property
    def start_time(self) -> float | None:
        found = self.of(START_TIME)
        return found[0].value if found else None


def parse_snapshot(text: str, path: str = "<text>") -> Snapshot:
    """The samples of one exposition; CollectError: empty, garbled or not a process's page."""
    if not text.strip():
        raise CollectError(f"{path} is empty: no metrics were read")
    # Imported here: ~0.08 s of CPU that every `bisector score` of a log paid at start.
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, list[Sample]] = {}
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                key = (s.name, _series_key(s.labels))
                if key in seen:  # two pages in one file (`>>`), or one edited: which reads?
                    shown = ",".join(f'{k}="{v}"' for k, v in key[1])
                    raise CollectError(
                        f"{path} holds {s.name}{{{shown}}} twice: not one /metrics page "
                        "(a `metrics` command that appends?); write each snapshot afresh"
                    )
                seen.add(key)
                samples.setdefault(s.name, []).append(Sample(s.name, dict(s.labels), s.value))
                types.setdefault(s.name, family.type)
                helps.setdefault(s.name, family.documentation)
    except (ValueError, IndexError, KeyError) as exc:
        raise CollectError(f"{path} is not Prometheus text format: {exc}") from None
    snapshot = Snapshot(path, {k: tuple(v) for k, v in samples.items()}, types, helps)
    if snapshot.start_time is None:
        raise CollectError(
            f"{path} has no {START_TIME}: not a process's /metrics (cut short or another page)"
        )
    return snapshot


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """At most `limit` bytes of `path`, read as a stream: a FIFO (`<(curl ...)`) or a
    device has no size to check first, and /dev/zero never ends. CollectError past it."""
    with open_input(path) as fh:  # a FIFO with no writer: empty, never a hang
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise CollectError(
            f"{path} holds more than {limit >> 20} MiB: larger than any {what} (an endless "
            "input such as /dev/zero, or the wrong file?); pass the file itself"
        )
    return data


def read_snapshot(path: Path) -> Snapshot:
    try:
        data = read_bounded(path, MAX_SNAPSHOT_BYTES, "/metrics page")
    except FileNotFoundError:
        raise CollectError(f"no metrics snapshot at {path}") from None
    except OSError as exc:
        raise CollectError(f"{path} cannot be read: {exc}") from None
    return parse_snapshot(data.decode("utf-8", errors="replace"), str(path))


@dataclass(frozen=True)
class Window:
    """Two snapshots of one process: at the warmup's start and at its end."""

    before: Snapshot
    after: Snapshot

    def __post_init__(self) -> None:
        if self.before.start_time != self.after.start_time:
            raise CollectError(
                f"the process restarted between the snapshots ({START_TIME} "
                f"{self.before.start_time:g} -> {self.after.start_time:g}): its counters "
                "started again and say nothing of the whole window"
            )
        if self.before.samples == self.after.samples:  # a live page always moves (its CPU)
            raise CollectError(
                f"the snapshots {self.before.path} and {self.after.path} are identical: one "
                "page read twice (the same file, a cache), so nothing was measured between them"
            )


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """PromQL equality matching: a label the series lacks reads as the empty string."""
    return all(labels.get(key, "") == value for key, value in selector.items())


def _finite(sample: Sample, path: str) -> float:
    if not math.isfinite(sample.value) or sample.value < 0:
        raise CollectError(f"{path}: {sample.name} reads {sample.value}, not a count")
    return sample.value


def _series_key(labels: Mapping[str, str], drop: str = "") -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != drop))


def _increases(
    window: Window, name: str, selector: Mapping[str, str], by: str = ""
) -> dict[tuple[tuple[str, str], ...], float]:
    """after - before per selected series of `name` (keyed by its labels); a reset raises."""
    before = {
        _series_key(s.labels): _finite(s, window.before.path)
        for s in window.before.of(name)
        if selects(selector, s.labels)
    }
    found: dict[tuple[tuple[str, str], ...], float] = {}
    for s in window.after.of(name):
        if not selects(selector, s.labels):
            continue
        key = _series_key(s.labels)
        delta = _finite(s, window.after.path) - before.get(key, 0.0)
        if delta < 0:
            shown = ",".join(f'{k}="{v}"' for k, v in key)
            raise CollectError(
                f"{name}{{{shown}}} went down between the snapshots: the counter was reset "
                "(process restarted); its increase over the window is unknown"
            )
        found[key] = delta
    gone = [key for key in before if key not in found]
    if gone:  # a live registry never drops a series: the page was cut or edited short
        shown = ",".join(f'{k}="{v}"' for k, v in gone[0])
        raise CollectError(
            f"{name}{{{shown}}} is in {window.before.path} but missing from "
            f"{window.after.path}: the second snapshot is cut short; the increase is unknown"
        )
    return found


def counter_increase(
    window: Window, name: str, selector: Mapping[str, str], *, absent_is_zero: bool = False
) -> float:
    """The selected series' increase; no series in either snapshot is a CollectError
    unless `absent_is_zero` (the metric declared what its absence means)."""
    found = _increases(window, name, selector)
    if not found and not absent_is_zero:
        shown = ",".join(f'{k}="{v}"' for k, v in sorted(selector.items()))
        raise CollectError(
            f"{name}{{{shown}}} is in neither snapshot: absent is not zero (the apiserver may "
            "not have this metric yet); if its absence means none happened, declare "
            'absent = "zero" in the metric\'s table'
        )
    return sum(found.values())


def _selected_at_end(
    window: Window,
    name: str,
    selector: Mapping[str, str],
    absent_is_zero: bool,
    *,
    pattern: bool = False,
) -> list[Sample]:
    """The selected series of `name` (with `pattern`, of every sample name it matches
    whole) in the second snapshot; none is a CollectError (absent is not zero: a tree
    before the one that added the metric prints nothing either) unless `absent_is_zero`
    (the metric declared what its absence means)."""
    found = selected_in(window.after, name, selector, pattern=pattern)
    if found or absent_is_zero:
        return found
    if pattern:
        shown = "".join(f',{k}="{v}"' for k, v in sorted(selector.items()))
        what = f'no series of {window.after.path} matches {{__name__=~"{name}"{shown}}}'
        may = "the process may not register such families, or under other names"
    else:
        shown = ",".join(f'{k}="{v}"' for k, v in sorted(selector.items()))
        what = f"{name}{{{shown}}} is not in {window.after.path}"
        may = "the process may not have this metric, or it is another family name in this version"
    raise CollectError(
        f"{what}: absent is not zero ({may}); if its absence means none, declare "
        'absent = "zero" in the metric\'s table'
    )


def gauge_value(
    window: Window, name: str, selector: Mapping[str, str], *, absent_is_zero: bool = False
) -> float:
    """The selected series of a gauge at the window's end, summed. The window (both
    snapshots) is still required: a process that restarted in it reads a fresh value."""
    found = _selected_at_end(window, name, selector, absent_is_zero)
    values = [s.value for s in found]
    if not all(math.isfinite(v) for v in values):
        raise CollectError(f"{window.after.path}: {name} reads {values}, not a number")
    return sum(values)


def series_count(
    window: Window, name: str, selector: Mapping[str, str], *, absent_is_zero: bool = False
) -> int:
    """How many series of sample `name` the selector picks at the window's end."""
    return len(_selected_at_end(window, name, selector, absent_is_zero))


def selected_in(
    snapshot: Snapshot, name: str, selector: Mapping[str, str], *, pattern: bool = False
) -> list[Sample]:
    """The series of sample `name` (or, with `pattern`, of every sample name the pattern
    matches whole) the selector picks in one snapshot."""
    if not pattern:
        return [s for s in snapshot.of(name) if selects(selector, s.labels)]
    whole = re.compile(f"(?:{name})")
    return [
        s
        for sample_name, samples in snapshot.samples.items()
        if whole.fullmatch(sample_name)
        for s in samples
        if selects(selector, s.labels)
    ]


def series_matching(
    window: Window, pattern: str, selector: Mapping[str, str], *, absent_is_zero: bool = False
) -> int:
    """How many series of the sample names `pattern` matches whole the selector picks at the
    window's end (PromQL `count({__name__=~"pattern", ...})`)."""
    return len(_selected_at_end(window, pattern, selector, absent_is_zero, pattern=True))


@dataclass(frozen=True)
class Bucket:
    upper_bound: float
    count: float


def bucket_quantile(q: float, buckets: Iterable[Bucket]) -> float:
    """Prometheus' `BucketQuantile` over classic histogram buckets (NaN: no answer)."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(buckets, key=lambda b: b.upper_bound)
    if not ordered or not math.isinf(ordered[-1].upper_bound):
        return math.nan
    coalesced: list[Bucket] = []
    for b in ordered:  # same bound twice (e.g. series summed): one bucket, counts added
        if coalesced and coalesced[-1].upper_bound == b.upper_bound:
            coalesced[-1] = Bucket(b.upper_bound, coalesced[-1].count + b.count)
        else:
            coalesced.append(b)
    highest = 0.0
    for i, b in enumerate(coalesced):  # counts never fall with the bound
        highest = max(highest, b.count)
        coalesced[i] = Bucket(b.upper_bound, highest)
    if len(coalesced) < 2:
        return math.nan
    observations = coalesced[-1].count
    if observations == 0:
        return math.nan
    rank = q * observations
    index = next(
        (i for i in range(len(coalesced) - 1) if coalesced[i].count >= rank), len(coalesced) - 1
    )
    if index == len(coalesced) - 1:
        return coalesced[-2].upper_bound
    if index == 0 and coalesced[0].upper_bound <= 0:
        return coalesced[0].upper_bound
    start, end, count = 0.0, coalesced[index].upper_bound, coalesced[index].count
    if index > 0:
        start = coalesced[index - 1].upper_bound
        count -= coalesced[index - 1].count
        rank -= coalesced[index - 1].count
    return start + (end - start) * (rank / count)


def histogram_quantile(window: Window, name: str, selector: Mapping[str, str], q: float) -> float:
    """The q-quantile of the observations made between the snapshots; NaN when none were."""
    per_le: dict[float, float] = {}
    for key, delta in _increases(window, f"{name}_bucket", selector).items():
        le = dict(key).get("le")
        try:
            bound = float(le) if le is not None else math.nan
        except ValueError:
            bound = math.nan
        if math.isnan(bound):
            raise CollectError(f"{name}_bucket has a series without a numeric le ({le!r})")
        per_le[bound] = per_le.get(bound, 0.0) + delta
    return bucket_quantile(q, [Bucket(b, c) for b, c in per_le.items()])


def summary_quantile(snapshot: Snapshot, name: str, selector: Mapping[str, str], q: float) -> float:
    """The summary's own q-quantile in `snapshot`; exactly one series must be selected."""
    wanted = [
        s
        for s in snapshot.of(name)
        if selects(selector, s.labels) and _same_quantile(s.labels.get("quantile"), q)
    ]
    if len(wanted) > 1:
        raise CollectError(
            f"{len(wanted)} series of summary {name} match; a summary's quantiles cannot be "
            "summed: add labels that select one"
        )
    value = wanted[0].value if wanted else math.nan
    if math.isinf(value) or value < 0:  # an estimate of observed durations: never these
        raise CollectError(
            f"{snapshot.path}: summary {name}'s p{q * 100:g} reads {value:g}, not an observed value"
        )
    return value


def _same_quantile(text: str | None, q: float) -> bool:
    try:
        return text is not None and math.isclose(float(text), q)
    except ValueError:
        return False


def unit_of(snapshot: Snapshot, sample_name: str, family: str) -> str | None:
    """`s`, `ms` or `us` from the family's name or HELP text; None when neither says."""
    for suffix, unit in _SUFFIX_UNITS:
        if family.endswith(suffix):
            return unit
    helptext = snapshot.helps.get(sample_name, "").lower()
    for words, unit in _HELP_UNITS:
        if words in helptext:
            return unit
    return None
