"""The backends' names for help texts are the registry's, in its order."""

from __future__ import annotations

from bisector.backends.names import BACKEND_NAMES, backend_names
from bisector.backends.registry import BACKENDS


def test_the_help_texts_name_every_backend_of_the_registry_in_its_order() -> None:
    assert tuple(BACKENDS) == BACKEND_NAMES
    assert backend_names() == "sim, local, kind, gce or procs"
