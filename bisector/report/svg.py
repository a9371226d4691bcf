"""A matplotlib drawing as inline SVG text (no GUI backend, no external assets)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

# Text stays text in the SVG (selectable, searchable, crisp when printed).
_RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9,
    "svg.hashsalt": "0",
}


def svg_of(draw: Callable[[Any], None], width: float, height: float) -> str:
    """`draw(figure)` on a new Figure of width x height inches, returned as an <svg> element."""
    import matplotlib as mpl
    from matplotlib.figure import Figure  # a bare Figure needs no GUI backend

    with mpl.rc_context(_RC):  # type: ignore[arg-type]  # keys typed as literals
        fig = Figure(figsize=(width, height))
        draw(fig)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    svg = svg[svg.find("<svg") :]
    # Scale with the page instead of a fixed size in points.
    head, _, rest = svg.partition(">")
    for attr in ("width", "height"):
        start = head.find(f' {attr}="')
        if start >= 0:
            end = head.find('"', start + len(attr) + 3)
            head = head[:start] + head[end + 1 :]
    return head + ' style="width:100%;height:auto">' + rest
