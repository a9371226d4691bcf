"""The terminal: the one rich Console of the tool, and NO_COLOR.

With NO_COLOR set to anything (https://no-color.org) the console writes no escape
sequences at all, bold and dim included: rich's own NO_COLOR support drops colours only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def no_color() -> bool:
    """NO_COLOR is set to something (an empty value does not count, as no-color.org says)."""
    return bool(os.environ.get("NO_COLOR"))


def make_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, soft_wrap=soft_wrap, color_system=None if no_color() else "auto")
