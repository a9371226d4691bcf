"""A job's runs in a CI bucket: which exist, what their metadata says, where the master log is.

Layout (shared/reference/kubernetes.md): `gs://BUCKET/logs/JOB/RUN/` with
`started.json`, `finished.json` and `artifacts/<master-name>/kube-apiserver.log*`;
`logs/JOB/latest-build.txt` names the newest finished run.

Today's CL2 jobs (ci-kubernetes-e2e-gce-scale-performance-*, kubetest2 + kops) have CL2
write its summaries into the build's `artifacts/` itself (`--report-dir=$ARTIFACTS`):
`find_summary` finds one there by its file-name prefix (bisector.metrics.cl2).

Which master: a kubemark job dumps two masters, the base cluster's
(`<prefix>-master`) and the kubemark master (`<prefix>-kubemark-master`), whose
apiserver serves the hollow nodes. Among the `artifacts/` directories holding a
`kube-apiserver.log*` set, the first in this order wins: an explicit `master`
name; names ending in `kubemark-master`; names ending in `-master`; any other;
alphabetically within each group.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from bisector.ci.gcs import TIMEOUT, access_error, retrying
from bisector.ci.metadata import RunInfo, parse_run
from bisector.errors import BisectorError
from bisector.metrics.cl2 import pick_file

DEFAULT_BUCKET = "kubernetes-ci-logs"
# The live file, numbered rotations (`.1`, `.2.gz`) and dated ones (`-20170602[-N][.gz]`);
# never `kube-apiserver-audit.log`.
# started.json/finished.json are a few hundred bytes; more is not metadata.
MAX_METADATA_BYTES = 1 << 20
APISERVER_LOG = re.compile(r"^kube-apiserver\.log(?:\.\d+|-\d{8}(?:-\d+)?)?(?:\.gz)?$")


@dataclass(frozen=True)
class LogObject:
    name: str  # object name in the bucket
    generation: int  # changes whenever the object is rewritten: the cache key
    size: int  # stored bytes (gzip-encoded objects: compressed)

    def url(self, bucket: str) -> str:
        return f"gs://{bucket}/{self.name}"


@dataclass(frozen=True)
class LogSet:
    """The master's apiserver log files of one run."""

    master: str
    objects: tuple[LogObject, ...]


@dataclass(frozen=True)
class JobRef:
    bucket: str
    job: str

    @property
    def prefix(self) -> str:
        return f"logs/{self.job}/"

    def run_prefix(self, run: int) -> str:
        return f"{self.prefix}{run}/"

    def __str__(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}"


def list_runs(client: Any, job: JobRef) -> list[int]:
    """Run numbers of the job (from its `RUN/` prefixes), ascending; errors if there are none."""

    def prefixes() -> set[str]:
        pages = client.list_blobs(
            job.bucket, prefix=job.prefix, delimiter="/", timeout=TIMEOUT, retry=None
        )
        for _ in pages:  # the prefixes are filled in while iterating
            pass
        return set(pages.prefixes)

    try:
        found = retrying(prefixes)
    except gexc.GoogleAPIError as exc:
        raise access_error(exc, f"bucket gs://{job.bucket}") from None
    runs = sorted(int(name) for p in found if (name := p[len(job.prefix) :].rstrip("/")).isdigit())
    if not runs:
        raise BisectorError(
            f"no runs of job {job.job!r} in gs://{job.bucket}/logs/; check --job "
            "(and --bucket: kubernetes-jenkins holds the history before the move)"
        )
    return runs


def latest_build(client: Any, job: JobRef) -> int | None:
    """The number in `latest-build.txt`, None when absent or unreadable."""
    text = _read_text(client, job.bucket, f"{job.prefix}latest-build.txt")
    return int(text.strip()) if text and text.strip().isdigit() else None


def select_runs(
    runs: Sequence[int], *, span: tuple[int, int] | None = None, last: int | None = None
) -> list[int]:
    """Runs in the inclusive `span`, else the `last` N, else all; errors when none is left."""
    chosen = list(runs)
    if span is not None:
        low, high = span
        chosen = [r for r in chosen if low <= r <= high]
        if not chosen:
            raise BisectorError(f"no run in {low}..{high}; this job has runs {runs[0]}..{runs[-1]}")
    if last is not None:
        chosen = chosen[-last:]
    return chosen


def parse_span(text: str) -> tuple[int, int]:
    """`427..447` -> (427, 447); a single `442` -> (442, 442)."""
    low, sep, high = text.partition("..")
    try:
        span = (int(low), int(high if sep else low))
    except ValueError:
        raise BisectorError(f"--runs {text!r} is not A..B (e.g. 427..447)") from None
    if span[0] > span[1]:
        raise BisectorError(f"--runs {text}: the first run must not be after the last")
    return span


def read_run_info(client: Any, job: JobRef, run: int) -> RunInfo:
    """The run's commit, result and times from started.json / finished.json."""
    prefix = job.run_prefix(run)
    started, started_problem = _read_json(client, job.bucket, prefix + "started.json")
    finished, finished_problem = _read_json(client, job.bucket, prefix + "finished.json")
    problems = [p for p in (started_problem, finished_problem) if p]
    return parse_run(run, started, finished, problems=problems)


def find_log_set(client: Any, job: JobRef, run: int, master: str | None = None) -> LogSet | None:
    """The master's kube-apiserver log set of `run`, None when the run uploaded none."""
    artifacts = job.run_prefix(run) + "artifacts/"

    def directories() -> list[str]:
        pages = client.list_blobs(
            job.bucket, prefix=artifacts, delimiter="/", timeout=TIMEOUT, retry=None
        )
        for _ in pages:
            pass
        return sorted(p[len(artifacts) :].rstrip("/") for p in pages.prefixes)

    def log_objects(directory: str) -> list[LogObject]:
        prefix = f"{artifacts}{directory}/kube-apiserver.log"
        return [
            LogObject(blob.name, int(blob.generation), int(blob.size or 0))
            for blob in client.list_blobs(job.bucket, prefix=prefix, timeout=TIMEOUT, retry=None)
            if APISERVER_LOG.match(blob.name.rsplit("/", 1)[-1])
        ]

    for directory in _master_order(retrying(directories), master):
        objects = retrying(functools.partial(log_objects, directory))
        if objects:
            return LogSet(directory, tuple(objects))
    return None


def _master_order(directories: Sequence[str], master: str | None) -> list[str]:
    if master is not None:
        return [master] if master in directories else []

    def rank(name: str) -> tuple[int, str]:
        if name.endswith("kubemark-master"):
            return (0, name)
        if name.endswith("-master"):
            return (1, name)
        return (2, name)

    return sorted(directories, key=rank)


def _read_text(client: Any, bucket: str, name: str, limit: int | None = None) -> str | None:
    """The object's text (its first `limit` bytes), None when it does not exist."""
    blob = client.bucket(bucket).blob(name)
    end = None if limit is None else limit - 1
    try:
        data: bytes = retrying(lambda: blob.download_as_bytes(end=end, timeout=TIMEOUT, retry=None))
    except gexc.NotFound:
        return None
    except gexc.GoogleAPIError as exc:
        raise access_error(exc, f"gs://{bucket}/{name}") from None
    return data.decode("utf-8", errors="replace")


def _read_json(client: Any, bucket: str, name: str) -> tuple[dict[str, object] | None, str | None]:
    """The object as a JSON object, or None and (when it exists) why it cannot be used.

    A truncated, oversized, too deeply nested or non-object file is reported, and
    the run is shown without that file's facts. NaN and Infinity (which Python's
    json accepts) stay the strings "NaN"/"Infinity", so no float field is NaN.
    """
    short = name.rsplit("/", 1)[-1]
    text = _read_text(client, bucket, name, limit=MAX_METADATA_BYTES + 1)
    if text is None:
        return None, None
    if len(text.encode()) > MAX_METADATA_BYTES:
        return None, f"{short} is larger than {MAX_METADATA_BYTES} bytes"
    try:
        doc = json.loads(text, parse_constant=str)
    except (ValueError, RecursionError):
        return None, f"{short} is not JSON (truncated or nested too deeply)"
    if not isinstance(doc, dict):
        return None, f"{short} is not a JSON object"
    return doc, None


def find_summary(client: Any, job: JobRef, run: int, prefix: str) -> LogObject | None:
    """The one CL2 summary `prefix`* directly under the run's `artifacts/`, None if none;
    CollectError (from bisector.metrics.cl2) when several match."""
    artifacts = job.run_prefix(run) + "artifacts/"

    def listing() -> dict[str, LogObject]:
        found: dict[str, LogObject] = {}
        pages = client.list_blobs(
            job.bucket, prefix=artifacts + prefix, delimiter="/", timeout=TIMEOUT, retry=None
        )
        for blob in pages:
            found[blob.name[len(artifacts) :]] = LogObject(
                blob.name, int(blob.generation), int(blob.size or 0)
            )
        return found

    objects = retrying(listing)
    if not objects:
        return None
    return objects[pick_file(list(objects), prefix, f"gs://{job.bucket}/{artifacts}")]


def read_object(client: Any, bucket: str, obj: LogObject, limit: int) -> bytes:
    """The object's bytes (at most `limit`: a bigger one is cut and then fails to parse)."""
    blob = client.bucket(bucket).blob(obj.name)
    try:
        data: bytes = retrying(
            lambda: blob.download_as_bytes(end=limit - 1, timeout=TIMEOUT, retry=None)
        )
    except gexc.GoogleAPIError as exc:
        raise access_error(exc, obj.url(bucket)) from None
    return data
