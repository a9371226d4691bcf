"""The bisection itself: evaluate candidates, decide verdicts, feed git bisect, report.

Public API:
    run_bisection(options, ...) -> Report       the whole `bisector run`
    plan_bisection(options) -> Plan              what `--dry-run` prints
    evaluate_candidate(backend, candidate, ...)  one build/launch/warmup/collect/score/teardown
    Strategy / GitBisectStrategy                 which commit(s) to evaluate next
    DecisionRule / MajorityRule                  when a commit's measurements make a verdict
"""

from __future__ import annotations

from bisector.search.decide import Decision, DecisionRule, MajorityRule, calibrate_threshold
from bisector.search.evaluator import Evaluator
from bisector.search.measure import Measurement, evaluate_candidate
from bisector.search.options import RunOptions
from bisector.search.plan import Plan, plan_bisection
from bisector.search.report import Report
from bisector.search.runner import run_bisection
from bisector.search.strategy import GitBisectStrategy, SearchState, Strategy

__all__ = [
    "Decision",
    "DecisionRule",
    "Evaluator",
    "GitBisectStrategy",
    "MajorityRule",
    "Measurement",
    "Plan",
    "Report",
    "RunOptions",
    "SearchState",
    "Strategy",
    "calibrate_threshold",
    "evaluate_candidate",
    "plan_bisection",
    "run_bisection",
]
