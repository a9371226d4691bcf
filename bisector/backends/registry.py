"""The one table of available backends."""

from __future__ import annotations

from bisector.backends.base import Backend, BackendContext, BackendFactory
from bisector.backends.sim import SimBackend
from bisector.errors import ConfigError

BACKENDS: dict[str, BackendFactory] = {
    "sim": SimBackend,
}


def create_backend(name: str, context: BackendContext) -> Backend:
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise ConfigError(f"unknown backend {name!r}; choose one of: {known}") from None
    return factory(context)
