"""A ClusterLoader2 CI job's builds in GCS, in today's layout, for `history` tests.

`gs://kubernetes-ci-logs/logs/<job>/<build>/` per build (a prow build id): pod-utils
`started.json` and `finished.json` (fields of kubernetes/test-infra testgrid/metadata/job.go
at 170921984a: started timestamp/repos/repo-version, finished timestamp/passed/result/
revision/metadata; `repos` values are `<base_ref>:<base_sha>`), `prowjob.json` (test-infra
prow/apis/prowjobs/v1/types.go at 170921984a: spec.type/job/extra_refs[org, repo, base_ref,
base_sha], status.state/build_id/startTime/completionTime), `build-log.txt`, and the CL2
summaries in `artifacts/` (the job runs CL2 with --report-dir=$ARTIFACTS), written from the
perf-tests schemas by tests/helpers/evidence.py; plus the job's `latest-build.txt`.
The job is real: kubernetes/test-infra config/jobs/kubernetes/sig-scalability/
sig-scalability-release-blocking-jobs.yaml at 9cd5798cbb (2026-08-22), `interval: 30m`,
kubetest2 + kops + CL2 on cluster k8s-infra-prow-build.

`PLANTED_BUILDS`: 30 builds of that job with planted steps (`history` and `nightly` tests
read the same series); `local_cl2_tables` the config of a local backend whose workload
writes a SchedulingThroughput summary, good or bad by the tree it runs in.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.helpers.evidence import cl2_summaries, scheduling_throughput, summary_name
from tests.helpers.gcs import ensure_bucket, upload_gzip_encoded

CL2_JOB = "ci-kubernetes-e2e-gce-scale-performance-100"
FIRST_BUILD = 1_861_000_000_000_000_000  # prow build ids are snowflake-like 19-digit numbers
_T0 = datetime(2026, 11, 20, 0, 0, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Cl2Build:
    index: int
    commit: str  # the kubernetes commit the build tested (40 hex)
    patch_node_status_p99_ms: float = 45.0
    throughput: float = 100.0
    pod_startup_p99_ms: float = 2800.0
    passed: bool = True
    summaries: bool = True  # False: the build died before CL2 wrote its report

    @property
    def build(self) -> int:
        return FIRST_BUILD + self.index * 7_654_321

    @property
    def started(self) -> float:
        return _T0 + self.index * 1800  # every 30 minutes


def _metadata(job: str, b: Cl2Build) -> dict[str, dict[str, Any]]:
    perf_tests = "9" * 40
    started = {
        "timestamp": int(b.started),
        "repos": {
            "kubernetes/kubernetes": f"master:{b.commit}",
            "kubernetes/perf-tests": f"master:{perf_tests}",
            "kubernetes/kops": "master:" + "8" * 40,
        },
        "repo-version": b.commit,
        "metadata": {},
    }
    finished = {
        "timestamp": int(b.started) + 2900,
        "passed": b.passed,
        "result": "SUCCESS" if b.passed else "FAILURE",
        "revision": b.commit,
        "metadata": {"repo": "k8s.io/kubernetes", "repos": started["repos"]},
    }
    stamp = datetime.fromtimestamp(b.started, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    prowjob = {
        "kind": "ProwJob",
        "apiVersion": "prow.k8s.io/v1",
        "metadata": {"name": f"00000000-0000-0000-0000-{b.index:012d}"},
        "spec": {
            "type": "periodic",
            "job": job,
            "extra_refs": [
                {
                    "org": "kubernetes",
                    "repo": "kubernetes",
                    "base_ref": "master",
                    "base_sha": b.commit,
                    "path_alias": "k8s.io/kubernetes",
                },
                {
                    "org": "kubernetes",
                    "repo": "perf-tests",
                    "base_ref": "master",
                    "base_sha": perf_tests,
                    "path_alias": "k8s.io/perf-tests",
                },
            ],
        },
        "status": {
            "state": "success" if b.passed else "failure",
            "build_id": str(b.build),
            "startTime": stamp,
            "completionTime": stamp,
        },
    }
    return {"started.json": started, "finished.json": finished, "prowjob.json": prowjob}


def write_cl2_job(client: Any, bucket: str, job: str, builds: Sequence[Cl2Build]) -> None:
    ensure_bucket(client, bucket)
    store = client.bucket(bucket)
    for b in builds:
        prefix = f"logs/{job}/{b.build}/"
        for name, doc in _metadata(job, b).items():
            store.blob(prefix + name).upload_from_string(json.dumps(doc))
        upload_gzip_encoded(client, bucket, prefix + "build-log.txt", b"kubetest2 kops up\n")
        if not b.summaries:
            continue
        when = datetime.fromtimestamp(b.started + 2000, UTC)
        docs = cl2_summaries(
            patch_node_status_p99_ms=b.patch_node_status_p99_ms,
            pod_startup_p99_ms=b.pod_startup_p99_ms,
            throughput=b.throughput,
        )
        for summary, doc in docs.items():
            name = prefix + "artifacts/" + summary_name(summary, "load", when)
            store.blob(name).upload_from_string(json.dumps(doc, indent=2))
        store.blob(prefix + "artifacts/junit_01.xml").upload_from_string("<testsuites/>")
    last = max(b.build for b in builds)
    store.blob(f"logs/{job}/latest-build.txt").upload_from_string(str(last))


PATCH_STEP_AT = 18  # apiserver_patch_node_status_p99_ms: builds 0..17 good, 18..29 bad
THROUGHPUT_STEP_AT = 20  # scheduling_throughput: 100 pods/s, then 40 from build 20 on
NO_SUMMARY_BUILD = 9  # died before CL2 wrote its report
NOISY_BUILD = 5  # a lone 95 ms p99 among 40-50 ms: noise, not the step

# Run-to-run noise, in ms (doubled) for the p99 and in pods/s for the throughput.
_NOISE = [3, -4, 1, 5, -2, 0, 4, -5, 2, -1, 5, -3, 0, 1, -4,
          3, -2, 2, 4, -1, 0, -5, 3, 1, -2, 5, 0, -3, 2, 1]  # fmt: skip


def planted_commit(i: int) -> str:
    return f"{i:08x}" + "c0ffee" * 5 + "ab"


def planted_builds(*, throughput_rises: bool = False) -> list[Cl2Build]:
    """30 builds: p99 of PATCH nodes/status 40-50 ms with one noisy 95 ms build, then
    130-150 ms from PATCH_STEP_AT; scheduling throughput ~100 pods/s dropping to ~40 at
    THROUGHPUT_STEP_AT (`throughput_rises`: ~40 rising to ~100 there instead)."""
    low, high = (40.0, 100.0) if throughput_rises else (100.0, 40.0)
    builds = [
        Cl2Build(
            i,
            planted_commit(i),
            patch_node_status_p99_ms=(45.0 if i < PATCH_STEP_AT else 140.0) + 2 * _NOISE[i],
            throughput=(low if i < THROUGHPUT_STEP_AT else high) + _NOISE[i],
            summaries=i != NO_SUMMARY_BUILD,
        )
        for i in range(30)
    ]
    builds[NOISY_BUILD] = Cl2Build(
        NOISY_BUILD, planted_commit(NOISY_BUILD), patch_node_status_p99_ms=95.0,
        throughput=low + 1,
    )  # fmt: skip
    return builds


PLANTED_BUILDS = planted_builds()


def local_cl2_tables(prefix: str = "", *, good: float = 100.0, bad: float = 40.0) -> str:
    """TOML of `[<prefix>run]` and `[<prefix>backends.local]`: a local backend whose
    workload writes a SchedulingThroughput summary to $BISECTOR_REPORT_DIR, `bad` pods/s
    in a tree whose `value` file says 1 (tests/helpers/repo.py), else `good`, and whose
    collect writes a one-line apiserver log."""
    line = (
        'echo "$(date -u +"I%m%d %H:%M:%S.%6N")       7 wrap.go:42] '
        'GET /api/v1/nodes: (1ms) 200 [[kubelet] 10.0.0.1:1]" >> "$BISECTOR_LOG"'
    )
    good_doc, bad_doc = (json.dumps(scheduling_throughput(v)) for v in (good, bad))
    workload = (
        # Every tree's run lasts about 1 s: the logs' spans stay comparable under load.
        "sleep 1; "
        f'if [ "$(cat value)" = 1 ]; then p={shlex.quote(bad_doc)}; '
        f"else p={shlex.quote(good_doc)}; fi; "
        'echo "$p" > "$BISECTOR_REPORT_DIR/SchedulingThroughput_load_$(date -u +%s).json"'
    )
    launch = 'mkdir -p "$(dirname "$BISECTOR_LOG")"; ' + line
    return (
        f'[{prefix}run]\nbackend = "local"\n[{prefix}backends.local]\n'
        f"launch = {json.dumps(launch)}\n"
        f"workload = {json.dumps(workload)}\ncollect = {json.dumps(line)}\n"
    )
