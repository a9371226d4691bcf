"""User-defined request-count metrics: `[metrics.NAME]` tables with verb, path regex, statuses.

```toml
[metrics.pod_binding_errors]
verb = "POST"                       # or a list: ["POST", "PUT"]; absent: any verb
path = "^/api/v1/namespaces/[^/]+/bindings"   # regex searched in the request URI
statuses = [500, 503]               # absent: any status
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bisector.config import Section
from bisector.errors import ConfigError
from bisector.logs.names import METRIC_NAMES

# `source = "log"` (the default) may be said outright; the other sources are in bisector.metrics.
_KEYS = ("source", "verb", "path", "statuses")


@dataclass(frozen=True)
class RequestMetric:
    name: str
    path: re.Pattern[str]
    verbs: frozenset[str] | None = None
    statuses: frozenset[int] | None = None

    def matches(self, verb: str, uri: str, status: int) -> bool:
        return (
            (self.verbs is None or verb in self.verbs)
            and (self.statuses is None or status in self.statuses)
            and self.path.search(uri) is not None
        )


def load_metric_definitions(section: Section) -> dict[str, RequestMetric]:
    """Parse a config's `[metrics]` table of request counts; errors name the file and key."""
    return {name: parse_request_metric(name, section.table(name)) for name in section}


def parse_request_metric(name: str, table: Section) -> RequestMetric:
    """One `[metrics.NAME]` request count (source "log")."""
    if name in METRIC_NAMES:
        raise ConfigError(f"{table.file}: `{table.path}` redefines a built-in metric; rename it")
    table.check_keys(_KEYS)
    raw_verbs = table.data.get("verb")
    if raw_verbs is None:
        verbs = None
    elif isinstance(raw_verbs, str):
        verbs = frozenset({raw_verbs.upper()})
    else:
        verbs = frozenset(v.upper() for v in table.get_str_list("verb"))
    # An empty list, "" or "PATCH /api" matches no request line (their verb is [A-Z]+,
    # bisector.logs.patterns): every commit would count 0 and score good.
    if verbs is not None and (not verbs or not all(v.isascii() and v.isalpha() for v in verbs)):
        raise ConfigError(
            f"{table.file}: key `{table.path}.verb`: expected a request verb or a list of them "
            f'such as "PATCH" or ["PUT", "PATCH"], got {raw_verbs!r}'
        )
    pattern = table.get_str("path")
    try:
        path = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{table.file}: key `{table.path}.path`: bad regex ({exc})") from None
    statuses = None
    if "statuses" in table:
        raw = table.data["statuses"]
        # A typo such as 4090, or an empty list, would match no request: every commit
        # would count 0 and score good.
        if (
            not isinstance(raw, list)
            or not raw
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
            or not all(100 <= v <= 599 for v in raw)
        ):
            raise ConfigError(
                f"{table.file}: key `{table.path}.statuses`: expected a list of HTTP status "
                f"codes (100-599) such as [409, 429], got {raw!r}"
            )
        statuses = frozenset(raw)
    return RequestMetric(name, path, verbs, statuses)
