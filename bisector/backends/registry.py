"""The one table of available backends.

Factories import their backend lazily so `bisector score` does not pay for the
imports of every backend.
"""

from __future__ import annotations

from bisector.backends.base import Backend, BackendContext, BackendFactory
from bisector.errors import ConfigError


def _gce(context: BackendContext) -> Backend:
    from bisector.backends.gce import GceBackend

    return GceBackend(context)


def _kind(context: BackendContext) -> Backend:
    from bisector.backends.kind import KindBackend

    return KindBackend(context)


def _sim(context: BackendContext) -> Backend:
    from bisector.backends.sim import SimBackend

    return SimBackend(context)


def _local(context: BackendContext) -> Backend:
    from bisector.backends.local import LocalBackend

    return LocalBackend(context)


BACKENDS: dict[str, BackendFactory] = {
    "gce": _gce,
    "kind": _kind,
    "local": _local,
    "sim": _sim,
}


def create_backend(name: str, context: BackendContext) -> Backend:
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise ConfigError(f"unknown backend {name!r}; choose one of: {known}") from None
    return factory(context)
