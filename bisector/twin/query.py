"""The output side of gcloud the 2017 scripts read: `--format`, `--filter`, `--regexp`.

Modelled: `value(f1,f2,...)` (tab-separated, one line per resource; a field is
a dotted path with `[i]` indexes), `json`, `[no-heading]` and
`[no-heading](f1,...)` (as value), `--filter=key=value` / `key:value` /
`key~regex` (one term), `--regexp`/`-r` (full match on the name). Anything else
is unmodelled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from bisector.twin.state import Unmodelled

_FIELD = re.compile(r"([A-Za-z_][\w-]*)|\[(\d+)\]")


def field(resource: Any, path: str) -> Any:
    value = resource
    for name, index in _FIELD.findall(path.replace(".", " ")):
        if value is None:
            return None
        if name:
            value = value.get(name) if isinstance(value, dict) else None
        else:
            i = int(index)
            value = value[i] if isinstance(value, list) and i < len(value) else None
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list):
        return ";".join(_text(v) for v in value)
    return str(value)


def render(fmt: str | None, resources: Sequence[dict[str, Any]], *, single: bool) -> str:
    """What gcloud prints for `resources` under `--format=fmt`."""
    if fmt is None:
        if single:
            return "".join(f"{k}: {json.dumps(v)}\n" for k, v in resources[0].items())
        return _table(resources)
    if fmt == "json":
        return json.dumps(resources[0] if single else list(resources), indent=2) + "\n"
    match = re.fullmatch(r"(?:value|\[no-heading\])\((.*)\)", fmt.strip())
    if match:
        paths = [p.strip() for p in match.group(1).split(",")]
        return "".join("\t".join(_text(field(r, p)) for p in paths) + "\n" for r in resources)
    if fmt.strip() == "[no-heading]":
        return "".join(f"{r['name']}\n" for r in resources)
    raise Unmodelled(f"--format={fmt}")


def _table(resources: Sequence[dict[str, Any]]) -> str:
    if not resources:
        return ""
    return "NAME\n" + "".join(f"{r['name']}\n" for r in resources)


def matches(resource: dict[str, Any], filter_expr: str | None, regexp: str | None) -> bool:
    if regexp is not None and not re.fullmatch(regexp, resource["name"]):
        return False
    if not filter_expr:
        return True
    term = re.fullmatch(r"\s*([\w.\[\]]+)\s*(=|:|~)\s*\(?([^)]*)\)?\s*", filter_expr)
    if term is None:
        raise Unmodelled(f"--filter={filter_expr}")
    key, op, want = term.groups()
    value = _text(field(resource, key))
    want = want.strip().strip("'\"")
    if op == "~":
        return re.search(want, value) is not None
    # `=`/`:` on a URL-valued field (network, zone, region) also matches its last part.
    return value == want or value.rsplit("/", 1)[-1] == want
