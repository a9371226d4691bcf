"""The `cl2` source: one number from a ClusterLoader2 summary file.

CL2 writes each measurement's summary into its report dir as
`<SummaryName>_<test name>[_<scenario id>]_<RFC3339 time>.<ext>` (kubernetes/perf-tests
`clusterloader2/pkg/test/simple_test_executor.go`), e.g.
`APIResponsivenessPrometheus_load_2024-08-07T16:16:53Z.json`,
`PodStartupLatency_PodStartupLatency_load_...json`, `SchedulingThroughput_load_...json`.
A metric names the file by its prefix (`summary`), picks one data item by labels and
reads one key of its `data`:

- perfdata (`clusterloader2/pkg/measurement/util/perftype.go`): `{"version": ...,
  "dataItems": [{"data": {"Perc50": .., "Perc90": .., "Perc99": ..}, "unit": "ms",
  "labels": {...}}]}`; the labels must select exactly one item;
- SchedulingThroughput (`pkg/measurement/common/scheduling_throughput.go`): one object
  `{"perc50": .., "perc90": .., "perc99": .., "max": ..}` read by `key` (no labels).

No file with the prefix, two of them, a file that is not JSON or not one of these
shapes (or holding a key twice in one object), no item or several for the labels, a key
that is absent, negative or not a finite number: each is no value (CollectError) with the
reason.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bisector.errors import CollectError
from bisector.metrics.prometheus import read_bounded
from bisector.proc import CommandError

MAX_SUMMARY_BYTES = 64 << 20
# The time CL2 wrote a summary, last in its name: Go's time.RFC3339 of SummaryTime()
# (simple_test_executor.go: strings.Join([name, test, time.Format(time.RFC3339)], "_")).
_WRITTEN = re.compile(r"_(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2}))\.[^.]+$")


@dataclass(frozen=True)
class Cl2Reading:
    value: float
    file: str  # the summary's file name
    unit: str | None  # the data item's unit ("ms"), None for throughput
    written: float | None = None  # epoch s the summary was written (its name, else its mtime)


def matching_files(names: Sequence[str], prefix: str) -> list[str]:
    """The summary files among `names` (base names) that start with `prefix`."""
    return sorted(n for n in names if n.startswith(prefix) and not n.endswith("/"))


def pick_file(names: Sequence[str], prefix: str, where: str) -> str:
    found = matching_files(names, prefix)
    if not found:
        raise CollectError(f"no CL2 summary {prefix}* in {where}")
    if len(found) > 1:
        raise CollectError(
            f"{len(found)} CL2 summaries {prefix}* in {where} ({', '.join(found[:3])}); "
            "name the one meant with a longer `summary` prefix"
        )
    return found[0]


def value_from(text: bytes | str, name: str, labels: Mapping[str, str], key: str) -> Cl2Reading:
    """`key` of the one data item of summary `name` whose labels include `labels`."""
    try:  # NaN/Infinity stay strings; a key twice (never from Go's encoding/json) raises
        doc = json.loads(text, parse_constant=lambda c: c, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise CollectError(
            f"CL2 summary {name} holds key {exc.key!r} twice in one object: edited or spliced, "
            "which value was measured is unknown"
        ) from None
    except (ValueError, RecursionError):
        raise CollectError(f"CL2 summary {name} is not JSON (cut short?)") from None
    if not isinstance(doc, dict):
        raise CollectError(f"CL2 summary {name} is not a JSON object")
    items = doc.get("dataItems")
    if items is None:
        if labels:
            raise CollectError(f"CL2 summary {name} has no dataItems to select {dict(labels)} from")
        return Cl2Reading(_number(doc, key, name), name, None)
    if not isinstance(items, list):
        raise CollectError(f"CL2 summary {name}: dataItems is not a list")
    chosen = [i for i in items if isinstance(i, dict) and _has_labels(i.get("labels"), labels)]
    if not chosen:
        raise CollectError(f"CL2 summary {name} has no data item with labels {dict(labels)}")
    if len(chosen) > 1:
        raise CollectError(
            f"{len(chosen)} data items of CL2 summary {name} have labels {dict(labels)}; "
            "add labels that select one"
        )
    data = chosen[0].get("data")
    if not isinstance(data, dict):
        raise CollectError(f"CL2 summary {name}: the data item has no data object")
    unit = chosen[0].get("unit")
    return Cl2Reading(_number(data, key, name), name, unit if isinstance(unit, str) else None)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def _has_labels(found: object, wanted: Mapping[str, str]) -> bool:
    if not wanted:
        return True
    return isinstance(found, dict) and all(found.get(k) == v for k, v in wanted.items())


def _number(data: Mapping[str, object], key: str, name: str) -> float:
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value) if abs(value) < 2**1023 else math.inf  # JSON ints are unbounded
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        keys = ", ".join(sorted(str(k) for k in data)) or "none"
        raise CollectError(f"CL2 summary {name}: {key!r} is {value!r}, not a number (keys: {keys})")
    if value < 0:  # a latency, a count, a throughput: none is negative
        raise CollectError(
            f"CL2 summary {name}: {key!r} is negative ({value!r}): not a measurement"
        )
    return float(value)


def summary_time(name: str) -> float | None:
    """Epoch seconds of the RFC3339 time in a summary's file name; None without one."""
    found = _WRITTEN.search(name)
    if found is None:
        return None
    try:
        return datetime.fromisoformat(found.group(1)).timestamp()
    except ValueError:
        return None


def read_dir(directory: Path, prefix: str, labels: Mapping[str, str], key: str) -> Cl2Reading:
    """The value from the one summary `prefix`* in `directory` (a CL2 --report-dir)."""
    try:
        names = [p.name for p in directory.iterdir() if p.is_file()]
    except FileNotFoundError:
        raise CollectError(f"no CL2 report directory at {directory}") from None
    except OSError as exc:
        raise CollectError(f"{directory} cannot be read: {exc}") from None
    name = pick_file(names, prefix, str(directory))
    path = directory / name
    try:
        text = read_bounded(path, MAX_SUMMARY_BYTES, "CL2 summary")
        written = summary_time(name)
        if written is None:
            written = path.stat().st_mtime
    except OSError as exc:
        raise CollectError(f"{path} cannot be read: {exc}") from None
    # When it was written: an evaluation holds it to its launch (another launch's summary
    # left in the report dir is stale), as it holds the log.
    return dataclasses.replace(value_from(text, name, labels, key), written=written)


# -- a workload that failed on its own SLO checks ------------------------------------------
#
# CL2 ends every test with printTestResult (clusterloader2/cmd/clusterloader.go): a dash
# line, "Test Finished", "  Status: Fail", "  Errors: [" + the test's ErrorList joined by
# "\n" (pkg/errors/error_list.go) + "]", a dash line; then `klog.Exitf("%d tests have
# failed!")`: exit 1, as for any other failure. A measurement that found its SLO broken
# still writes its summary and returns a MetricViolationError ("<metric>: <reason>",
# pkg/errors/metric_violation_error.go), which the executor wraps as "measurement call
# <Method> - <Identifier> error: <it>" (pkg/measurement/execute.go). The metrics CL2 names
# in its violations (the first argument of each NewMetricViolationError call):
VIOLATIONS = (
    "top latency metric",  # APIResponsivenessPrometheus
    "pod startup",  # PodStartupLatency
    "API availability",
    "container restarts",
    "probers",
    "claim allocation",
    "resource create",
)
_ERRORS_BLOCK = re.compile(r"Status: Fail\s*\n.*?Errors: \[(.*?)\]\s*\n[^\n]*-{20,}", re.DOTALL)
_VIOLATION = re.compile(
    r"^measurement call \S+ - \S+ error: \[?(?:"
    + "|".join(re.escape(v) for v in VIOLATIONS)
    + r"): "
)
_KLOG_HEAD = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] ")


def slo_violations(output: str) -> list[str] | None:
    """The SLO violations a failed CL2 run reported, when they are all its errors (the
    workload ran and measured a violation: a measurement); None when any error is of
    another kind, or the output holds no test result (the workload failed: a skip)."""
    blocks = _ERRORS_BLOCK.findall(output)
    if not blocks:
        return None
    errors: list[str] = []
    for block in blocks:
        for line in block.splitlines():
            text = _KLOG_HEAD.sub("", line).strip()
            if text:
                errors.append(text)
    if not errors or not all(_VIOLATION.match(e) for e in errors):
        return None
    return errors


VIOLATIONS_FILE = "slo-violations.txt"  # beside the summaries: what CL2 said was broken


def measured_violations(exc: CommandError, report_dir: Path) -> bool:
    """Whether a failed workload was ClusterLoader2 measuring SLO violations (exit 1, its
    test result listing only violations): then its summaries are a measurement, and what
    it found broken is kept in the report dir (VIOLATIONS_FILE) for a person to read."""
    if exc.code != 1:
        return False
    found = slo_violations(exc.stdout + "\n" + exc.stderr)
    if found is None:
        return False
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / VIOLATIONS_FILE).write_text("".join(f"{v}\n" for v in found))
    return True
