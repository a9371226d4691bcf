"""A Kubernetes CI job history in GCS, in the real layout, for `history` and `nightly` tests.

`write_job_history(client, bucket, job, runs)` writes, for each `CiRun`,
`logs/JOB/RUN/started.json`, `finished.json`, `build-log.txt` and the master's
kube-apiserver log set under `artifacts/<master>/` (rotated files; the live
`.log` stored gzip-encoded without suffix as `gsutil cp -z log` does, `.N`
plain, `.N.gz` gzip files), plus `latest-build.txt`. Logs are 2017 wrap.go
request lines (`apiserver_log`): `conflicts` node PATCH 409s among successful
node status writes and GETs; at `verbosity=2` there are no request lines.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from tests.helpers.gcs import ensure_bucket, upload_gzip_encoded

MASTER = "kubemark-2000-kubemark-master"
# The base cluster's own master sits next to the kubemark master in kubemark jobs.
BASE_MASTER = "e2e-kubemark-master-base-master"
_T0 = datetime(2017, 5, 20, 5, 51, tzinfo=UTC).timestamp()


@dataclass
class CiRun:
    run: int
    commit: str  # full 40-hex hash; bootstrap runs may publish only 14 of it (`full_commit`)
    conflicts: int = 0
    result: str | None = "SUCCESS"  # None: still running (no finished.json)
    era: Literal["bootstrap", "podutils"] = "bootstrap"
    logs: bool = True  # False: the run uploaded no master logs
    verbosity: int = 3  # 2: the default level, no request lines
    files: int = 2  # size of the rotated set
    full_commit: bool = True  # bootstrap: False -> only the version string names the commit
    node_writes: int = 60  # successful node status PATCHes
    master: str = MASTER
    base_master: bool = True  # also write the base cluster master's (quiet) log
    started: float | None = None  # epoch seconds; default: one run every 6 hours
    extra: dict[str, bytes] = field(default_factory=dict)  # more objects, relative to the run

    @property
    def start_time(self) -> float:
        return self.started if self.started is not None else _T0 + (self.run % 1000) * 6 * 3600

    @property
    def version(self) -> str:
        return f"v1.7.0-beta.0.{self.run % 100}+{self.commit[:14]}"


def _glog(t: float, text: str, level: str = "I", src: str = "wrap.go:42") -> str:
    stamp = datetime.fromtimestamp(t, UTC)
    return f"{level}{stamp:%m%d %H:%M:%S.%f}       7 {src}] {text}\n"


def apiserver_log(
    conflicts: int, *, node_writes: int = 60, verbosity: int = 3, start: float = _T0
) -> list[str]:
    """Lines of a kubemark apiserver log: writes, conflicts, GETs, cacher high-water marks."""
    lines = [_glog(start, "Starting kube-apiserver", src="server.go:112")]
    ua = "kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]"
    total = conflicts + node_writes
    for i in range(total):
        t = start + 1 + i * 0.01
        node = f"hollow-node-{i % 97}"
        status = 409 if _spread(i, conflicts, total) else 200
        if verbosity >= 3:
            lines.append(_glog(t, f"PATCH /api/v1/nodes/{node}/status: (3.1ms) {status} [[{ua}"))
            if i % 5 == 0:
                lines.append(_glog(t, f"GET /api/v1/nodes/{node}: (1.2ms) 200 [[{ua}"))
        if i % 50 == 0:
            lines.append(
                _glog(
                    t,
                    f"cacher (*api.Node): {min(100, 10 + i)} objects queued in incoming channel.",
                    src="cacher.go:566",
                )
            )
    return lines


def _spread(i: int, conflicts: int, total: int) -> bool:
    """Interleave conflicts with successful writes: exactly `conflicts` of `total` are True."""
    return (i * conflicts) // total != ((i + 1) * conflicts) // total


def split_rotated(lines: Sequence[str], files: int) -> list[tuple[str, bytes]]:
    """(object name, bytes) of a rotated set; oldest has the highest number, live file last."""
    files = max(1, files)
    size = -(-len(lines) // files)
    parts = ["".join(lines[k * size : (k + 1) * size]) for k in range(files)]
    named: list[tuple[str, bytes]] = []
    for k, text in enumerate(parts):
        age = files - 1 - k  # 0 = live file
        if age == 0:
            named.append(("kube-apiserver.log", text.encode()))
        elif age == 1:
            named.append(("kube-apiserver.log.1", text.encode()))
        else:
            named.append((f"kube-apiserver.log.{age}.gz", gzip.compress(text.encode())))
    return named


def _metadata(run: CiRun) -> tuple[dict[str, Any], dict[str, Any] | None]:
    started_at = run.start_time
    finished_at = started_at + 3 * 3600
    if run.era == "podutils":
        started: dict[str, Any] = {
            "timestamp": int(started_at),
            "repos": {"kubernetes/kubernetes": "master"},
            "repo-version": run.version,
            "metadata": {"uploader": "crier"},
        }
        finished: dict[str, Any] = {
            "timestamp": int(finished_at),
            "passed": run.result == "SUCCESS",
            "result": run.result,
            "revision": run.commit,
            "metadata": {"infra-commit": "0123abcd"},
        }
    else:
        started = {
            "timestamp": int(started_at),
            "node": "agent-light-7",
            "version": run.version,
            "repos": {"k8s.io/kubernetes": "master", "k8s.io/release": "master"},
        }
        meta: dict[str, Any] = {"job-version": run.version}
        if run.full_commit:
            meta["repo-commit"] = run.commit
        finished = {
            "timestamp": int(finished_at),
            "result": run.result,
            "passed": run.result == "SUCCESS",
            "job-version": run.version,
            "version": run.version,
            "metadata": meta,
        }
    return started, (finished if run.result is not None else None)


def write_run(client: Any, bucket: str, job: str, run: CiRun) -> None:
    prefix = f"logs/{job}/{run.run}/"
    store = client.bucket(bucket)
    started, finished = _metadata(run)
    store.blob(prefix + "started.json").upload_from_string(json.dumps(started))
    if finished is not None:
        store.blob(prefix + "finished.json").upload_from_string(json.dumps(finished))
    upload_gzip_encoded(client, bucket, prefix + "build-log.txt", b"W0520 kubemark up\n")
    if run.logs:
        lines = apiserver_log(
            run.conflicts,
            node_writes=run.node_writes,
            verbosity=run.verbosity,
            start=run.start_time,
        )
        upload_log_set(client, bucket, f"{prefix}artifacts/{run.master}/", lines, run.files)
        # Never the apiserver audit log, never other components' logs.
        store.blob(f"{prefix}artifacts/{run.master}/kube-apiserver-audit.log").upload_from_string(
            "".join(apiserver_log(999, node_writes=0, start=run.start_time))
        )
        store.blob(f"{prefix}artifacts/{run.master}/kube-scheduler.log").upload_from_string(
            "I0520 05:51:00.000000       7 scheduler.go:1] up\n"
        )
        if run.base_master:
            upload_log_set(
                client,
                bucket,
                f"{prefix}artifacts/{BASE_MASTER}/",
                apiserver_log(run.conflicts * 3 + 700, node_writes=0, start=run.start_time),
                1,
            )
    for name, data in run.extra.items():
        store.blob(prefix + name).upload_from_string(data)


def upload_log_set(
    client: Any, bucket: str, directory: str, lines: Sequence[str], files: int
) -> list[str]:
    """Upload a rotated apiserver log set into `directory`; returns the object names."""
    names = []
    for name, data in split_rotated(lines, files):
        if name.endswith(".log"):
            upload_gzip_encoded(client, bucket, directory + name, data)
        else:
            client.bucket(bucket).blob(directory + name).upload_from_string(data)
        names.append(directory + name)
    return names


def write_job_history(
    client: Any,
    bucket: str,
    job: str,
    runs: Iterable[CiRun],
    *,
    latest_build: int | None = None,
) -> list[CiRun]:
    """Write every run and `latest-build.txt` (the newest finished run unless given)."""
    ensure_bucket(client, bucket)
    written = list(runs)
    # A few uploads at once: a history of 20 runs is ~200 objects.
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(write_run, client, bucket, job, run) for run in written]:
            done.result()
    finished = [r.run for r in written if r.result is not None]
    latest = latest_build if latest_build is not None else max(finished, default=None)
    if latest is not None:
        client.bucket(bucket).blob(f"logs/{job}/latest-build.txt").upload_from_string(str(latest))
    return written


def commit_of(n: int) -> str:
    """A distinct, deterministic 40-hex commit hash for run `n` of a synthetic history."""
    return f"{n:08x}" + "c0ffee" * 5 + "ab"


GOOD_2017 = "1444d252e17ab7be24c1af07f4ef3bdb5dac8b48"
BAD_2017 = "7043372d05510b13a0928af92deda6110740dd5e"


def incident_history() -> list[CiRun]:
    """CI runs 427..447 of the 2017 hunt, conflicts scaled down 100x.

    Good runs (~45, 86 at 442), a lone noisy bad run (433), runs without logs (as in
    2017, when most runs lost theirs), one at --v=2, rotated sets of 1..3 files,
    bootstrap-era metadata (some naming the commit only in the version string) and
    pod-utils-era metadata; the step is between 442 (GOOD_2017) and 446 (BAD_2017).
    """
    good = {427: 44, 429: 50, 431: 48, 432: 52, 434: 47, 436: 55, 438: 61, 440: 58, 442: 86}
    runs: list[CiRun] = []
    for n in range(427, 448):
        commit = {442: GOOD_2017, 446: BAD_2017}.get(n, commit_of(n))
        era: Literal["bootstrap", "podutils"] = "podutils" if n >= 440 else "bootstrap"
        if n in good:
            runs.append(
                CiRun(n, commit, conflicts=good[n], era=era, files=1 + n % 3, full_commit=n != 436)
            )
        elif n == 433:  # one noisy run among good ones
            runs.append(CiRun(n, commit, conflicts=520, result="FAILURE", files=2))
        elif n == 430:  # apiserver at the default --v=2: no request lines
            runs.append(CiRun(n, commit, conflicts=900, verbosity=2))
        elif n == 446:
            runs.append(CiRun(n, commit, conflicts=463, era=era, files=3))
        elif n == 447:
            runs.append(CiRun(n, commit, conflicts=221, era=era, result="FAILURE"))
        else:  # logs missing
            runs.append(CiRun(n, commit, conflicts=0, logs=False, era=era))
    return runs
