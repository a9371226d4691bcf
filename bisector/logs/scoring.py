"""A first, line-by-line scorer for 2017-era request lines (to be replaced by the fast scanner)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bisector.errors import BisectorError

METRIC_NAMES = ("conflicts", "node_writes")

_REQUEST = re.compile(
    rb"\] (GET|POST|PUT|PATCH|DELETE) (/api/v1/nodes(?:/\S*)?): \([^)]*\) (\d{3}) "
)


@dataclass
class Scores:
    metrics: dict[str, object] = field(default_factory=dict)


def _read(source: str) -> bytes:
    path = Path(source)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BisectorError(f"cannot read log {source}: {exc.strerror}; check the path") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise BisectorError(f"{source} is a corrupt gzip file ({exc})") from None
    return raw


def score_logs(sources: Sequence[str]) -> Scores:
    conflicts = writes = request_lines = 0
    for source in sources:
        for line in _read(source).splitlines():
            match = _REQUEST.search(line)
            if not match:
                continue
            request_lines += 1
            verb, status = match.group(1), int(match.group(3))
            if verb == b"PATCH" and status == 409:
                conflicts += 1
            elif verb in (b"POST", b"PUT", b"PATCH") and status not in (404, 409, 429):
                writes += 1
    scores = Scores()
    scores.metrics["conflicts"] = conflicts if request_lines else None
    scores.metrics["node_writes"] = writes if request_lines else None
    return scores


def metric_value(scores: Scores, name: str) -> float | None:
    if name not in METRIC_NAMES:
        raise BisectorError(f"unknown metric {name!r}; choose one of: {', '.join(METRIC_NAMES)}")
    value = scores.metrics.get(name)
    return None if value is None else float(value)  # type: ignore[arg-type]
