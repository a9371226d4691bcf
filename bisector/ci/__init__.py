"""Kubernetes CI history: runs in GCS, their metadata and logs, scores, where a metric changed.

Public API (used by `bisector history` and `bisector nightly`):
    runs.JobRef(bucket, job); runs.list_runs(client, job) -> [run numbers]
    runs.latest_build(client, job) -> int | None; runs.select_runs(runs, span=, last=)
    runs.read_run_info(client, job, run) -> metadata.RunInfo
    runs.find_log_set(client, job, run, master=None) -> runs.LogSet | None
    scoring.score_run / score_runs(client, job, runs, cache, ScoreSettings, workers=)
        -> [scoring.RunScore]  (.value(metric) None = no logs / no data; .status(metric))
    cache.ScoreCache(directory | None), cache.default_cache_dir()
    regression.analyse(run_scores, metric, threshold=None, higher_is_worse=True) -> History
        (.changes: every change point with its runs; .found: RegressionRange | None)
    regression.find_regression(run_scores, metric, threshold=None) -> RegressionRange | None
    regression.metric_higher_is_worse(registry, metric) -> bool  (the one place)
    regression.bisect_argv(range, extra=[...]) -> ["bisector", "run", "--good", ...]
    changepoint.find_change_points(values, higher_is_worse=True) -> [ChangePoint]
    changepoint.find_step(values, threshold=None) -> Step | None  (the newest regression)
    gcs.client(), gcs.retrying(call), gcs.is_transient(exc)
"""
