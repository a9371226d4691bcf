"""Backends: how a candidate commit becomes a running cluster and a log.

Every backend implements `bisector.backends.base.Backend` and is described once, in
`registry.BACKENDS`. External programs are started only through `bisector.proc.run`.
"""
