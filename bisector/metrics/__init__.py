"""Metrics read from beside the apiserver log: ClusterLoader2 summaries (`cl2`), the
apiserver's `/metrics` at the warmup's start and end (`prometheus`), and process usage
(`process`). Their definitions (`[metrics.NAME] source = ...`, the built-ins) are in
definitions.py; bisector.metric_registry holds them with the log's own metrics.

Layout: definitions.py (types, keys, built-ins), cl2.py, prometheus.py (parsing is
prometheus_client's; increase and histogram_quantile over two snapshots), evidence.py
(where one run's files are; `read_metric`), scoring.py (an evaluation's scorer that
reads its own log directory).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from bisector.metrics.definitions import (
    BUILTIN_SOURCE_METRICS,
    Cl2Metric,
    ProcessMetric,
    PrometheusMetric,
    SourceMetric,
    parse_source_metric,
)
from bisector.metrics.direction import Worse, is_bad

if TYPE_CHECKING:
    from bisector.metrics.evidence import Evidence, Reading, read_metric
    from bisector.metrics.scoring import ReadsLogDir, SourceScorer, with_reading

# Reading the files (evidence.py, scoring.py: CL2 reports, processes, the backends' file
# names) is imported when first named: the metric registry needs only the definitions
# above, and `bisector score LOG` starts without the rest (~15 ms).
_LAZY = {
    "Evidence": "evidence",
    "Reading": "evidence",
    "read_metric": "evidence",
    "ReadsLogDir": "scoring",
    "SourceScorer": "scoring",
    "with_reading": "scoring",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = [
    "BUILTIN_SOURCE_METRICS",
    "Cl2Metric",
    "Evidence",
    "ProcessMetric",
    "PrometheusMetric",
    "Reading",
    "ReadsLogDir",
    "SourceMetric",
    "SourceScorer",
    "Worse",
    "is_bad",
    "parse_source_metric",
    "read_metric",
    "with_reading",
]
