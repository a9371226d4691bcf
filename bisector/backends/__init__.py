"""Backends: how a candidate commit becomes a running cluster and a log.

Every backend implements `Backend` and is listed in `registry.BACKENDS`.
External programs are started only through `bisector.proc.run`.
"""

from __future__ import annotations

from bisector.backends.base import Backend, BackendContext, Candidate

__all__ = ["Backend", "BackendContext", "Candidate"]
