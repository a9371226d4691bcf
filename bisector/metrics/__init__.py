"""Metrics read from beside the apiserver log: ClusterLoader2 summaries (`cl2`), the
apiserver's `/metrics` at the warmup's start and end (`prometheus`), and process usage
(`process`). Their definitions (`[metrics.NAME] source = ...`, the built-ins) are in
definitions.py; bisector.metric_registry holds them with the log's own metrics.

Layout: definitions.py (types, keys, built-ins), cl2.py, prometheus.py (parsing is
prometheus_client's; increase and histogram_quantile over two snapshots), readings.py
(where one run's files are; `read_metric`), scoring.py (an evaluation's scorer that
reads its own log directory).
"""

from __future__ import annotations

from bisector.metrics.definitions import (
    BUILTIN_SOURCE_METRICS,
    Cl2Metric,
    ProcessMetric,
    PrometheusMetric,
    SourceMetric,
    parse_source_metric,
)
from bisector.metrics.direction import Worse, is_bad

# Reading the files (readings.py, scoring.py) is imported from those modules by whoever
# reads them: the metric registry needs only the definitions above, and `bisector score
# LOG` starts without the rest.

__all__ = [
    "BUILTIN_SOURCE_METRICS",
    "Cl2Metric",
    "ProcessMetric",
    "PrometheusMetric",
    "SourceMetric",
    "Worse",
    "is_bad",
    "parse_source_metric",
]
