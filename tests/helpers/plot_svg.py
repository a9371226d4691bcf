"""A report plot's SVG read back: text stays text in it (bisector.report.svg, svg.fonttype
none)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def axes_texts(svg: str) -> list[list[str]]:
    """Every text of each axes group (`axes_1`, `axes_2`, ...), in drawing order."""
    root = ET.fromstring(svg)
    groups = [g for g in root.iter(f"{SVG}g") if re.fullmatch(r"axes_\d+", g.get("id", ""))]
    return [
        ["".join(t.itertext()).strip() for t in g.iter(f"{SVG}text") if "".join(t.itertext())]
        for g in groups
    ]
