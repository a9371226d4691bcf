"""The one table of available backends."""

from __future__ import annotations

from bisector.backends.base import Backend, BackendContext, BackendFactory
from bisector.errors import ConfigError

BACKENDS: dict[str, BackendFactory] = {}


def create_backend(name: str, context: BackendContext) -> Backend:
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise ConfigError(f"unknown backend {name!r}; choose one of: {known}") from None
    return factory(context)


def _local(context: BackendContext) -> Backend:
    from bisector.backends.local import LocalBackend

    return LocalBackend(context)


BACKENDS["local"] = _local
