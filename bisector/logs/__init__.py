"""Reading kube-apiserver logs and turning them into metrics.

Public API (used by `score`, the run loop and history):
    score_logs(sources, since=None, until=None, extra_metrics=None) -> Scores
    metric_value(scores, name) -> float | None   (None: the log has no data for it)
"""

from __future__ import annotations

from bisector.logs.scoring import METRIC_NAMES, Scores, metric_value, score_logs

__all__ = ["METRIC_NAMES", "Scores", "metric_value", "score_logs"]
