"""A local cache of scored CI runs, keyed by the exact objects that were read.

The key hashes the bucket, every log object's name and *generation* (GCS gives
a rewritten object a new generation, so a re-uploaded log is scored again), the
scoring settings (window, user metrics) and the tool's version. One small JSON
file per entry, written atomically (temp file + rename), so concurrent runs of
the tool and threads of one run never see half an entry; an unreadable entry is
treated as a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bisector import __version__
from bisector.ci.runs import LogSet
from bisector.logs import RequestMetric, Scores

# Bump when a change to the scorer alters results for the same bytes.
CACHE_FORMAT = 1


def default_cache_dir() -> Path:
    """$BISECTOR_CACHE_DIR, else $XDG_CACHE_HOME/bisector/history, else ~/.cache/bisector/..."""
    if explicit := os.environ.get("BISECTOR_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bisector" / "history"


def settings_fingerprint(
    since: float | None, until: float | None, extra_metrics: Mapping[str, RequestMetric] | None
) -> str:
    """What besides the bytes decides the scores."""
    extra = sorted(
        (
            m.name,
            m.path.pattern,
            sorted(m.verbs) if m.verbs is not None else None,
            sorted(m.statuses) if m.statuses is not None else None,
        )
        for m in (extra_metrics or {}).values()
    )
    return json.dumps([since, until, extra])


class ScoreCache:
    """Scores by log-set key; `directory=None` disables caching."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @staticmethod
    def key(bucket: str, logs: LogSet, settings: str) -> str:
        objects = sorted((o.name, o.generation) for o in logs.objects)
        text = json.dumps([CACHE_FORMAT, __version__, bucket, objects, settings])
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Scores | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            doc = json.loads(path.read_text())
            return Scores(dict(doc["metrics"]), tuple(doc["user_metrics"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, scores: Scores) -> None:
        path = self._path(key)
        if path is None:
            return
        doc = {"metrics": scores.metrics, "user_metrics": list(scores.user_metrics)}
        tmp: Path | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            tmp = Path(name)
            with os.fdopen(fd, "w") as handle:
                json.dump(doc, handle)
            tmp.replace(path)
        except OSError:
            # A cache that cannot be written costs time, never results.
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
