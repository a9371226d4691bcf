"""From settings to a culprit: the one run path every command takes.

    settings (bisector.settings) -> start.prepare_bisection -> start.open_bisection
    -> pipeline.find_culprit: endpoints -> search -> descent -> confirmation -> report

Nothing is imported here, so the layers below can use `bisector.bisection.layout`
without import cycles.
"""
