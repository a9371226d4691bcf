"""Backends: how a candidate commit becomes a running cluster and a log.

Every backend implements `bisector.backends.base.Backend` and is listed in
`registry.BACKENDS` (its names also in `names.py`, for help texts). External programs are
started only through `bisector.proc.run`. Nothing is imported here: `bisector score`
imports this package's names.py and collected.py without the backends' base (~20 ms).
"""
