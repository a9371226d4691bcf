"""A ClusterLoader2 CI job's builds in GCS, in today's layout, for `history` tests.

`gs://kubernetes-ci-logs/logs/<job>/<build>/` per build (a prow build id): pod-utils
`started.json` and `finished.json` (fields of kubernetes/test-infra testgrid/metadata/job.go
at 170921984a: started timestamp/repos/repo-version, finished timestamp/passed/result/
revision/metadata; `repos` values are `<base_ref>:<base_sha>`), `prowjob.json` (test-infra
prow/apis/prowjobs/v1/types.go at 170921984a: spec.type/job/extra_refs[org, repo, base_ref,
base_sha], status.state/build_id/startTime/completionTime), `build-log.txt`, and the CL2
summaries in `artifacts/` (the job runs CL2 with --report-dir=$ARTIFACTS), written from the
perf-tests schemas by tests/helpers/evidence.py; plus the job's `latest-build.txt`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.helpers.evidence import cl2_summaries, summary_name
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
