"""The Kubernetes executor: each evaluation one `batch/v1` Job (executor.py), its Job
(manifest.py), what its pod's fate says (faults.py), the run's watches (watch.py), the
API calls (api.py), the checks before a run (preflight.py), the sweep that deletes a
run's Jobs (sweep.py, also `bisector cleanup`'s step) and `[executor.kubernetes]`
(settings.py)."""
