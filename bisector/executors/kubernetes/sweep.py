"""Deleting every Job and pod of a run, by its label, and waiting until they are gone.

The executor's `close` does it at the end of every run; the same is the step recorded
in the run directory's resources.json before any Job is created, which `bisector
cleanup` replays after a driver was killed:

    python -m bisector.executors.kubernetes.sweep --namespace NS --run ID \\
        [--kubeconfig FILE] [--context NAME] [--in-cluster] [--wait SECONDS]

Each Job is deleted with foreground propagation (its pods first); pods the label still
finds afterwards (a Job deleted with orphaning by someone) are deleted too. Exit 0 when
nothing of the run is left, 1 otherwise (what is left is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from bisector.errors import BisectorError
from bisector.executors.kubernetes.api import KubeApi, gone, name_of, said
from bisector.executors.kubernetes.manifest import run_selector
from bisector.executors.kubernetes.settings import KubernetesSettings

POLL_S = 1.0


def sweep(
    api: KubeApi,
    run_id: str,
    wait_s: float,
    *,
    say: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Delete the run's Jobs and pods; what is still there after `wait_s` (empty: none)."""
    selector = run_selector(run_id)
    jobs, _ = api.list_jobs(selector)
    for job in jobs:
        name = name_of(job)
        if api.delete_job(name):
            say(f"deleting Job {name} (foreground: its pods first)")
    deadline = clock() + wait_s
    while True:
        jobs, _ = api.list_jobs(selector)
        pods, _ = api.list_pods(selector)
        left = [f"Job {name_of(j)}" for j in jobs] + [f"pod {name_of(p)}" for p in pods]
        if not jobs:
            for pod in pods:  # a pod left without its Job: deleted on its own
                _delete_pod(api, name_of(pod))
        if not left or clock() >= deadline:
            return left
        sleep(POLL_S)


def _delete_pod(api: KubeApi, name: str) -> None:
    from kubernetes.client import ApiException

    try:
        api.core.delete_namespaced_pod(name, api.namespace)
    except ApiException as exc:
        if not gone(exc):
            raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--run", required=True, help="the run's id (its Jobs' label)")
    parser.add_argument("--kubeconfig", default="")
    parser.add_argument("--context", default="")
    parser.add_argument("--in-cluster", action="store_true")
    parser.add_argument("--wait", type=float, default=180.0)
    args = parser.parse_args(argv)
    cfg = KubernetesSettings(
        kubeconfig=args.kubeconfig,
        context=args.context,
        in_cluster=args.in_cluster,
        namespace=args.namespace,
        image="",
        git_url="",
        requests={},
        limits={},
        node_selector={},
        pod_env={},
    )
    try:
        left = sweep(KubeApi.of(cfg), args.run, args.wait)
    except BisectorError as exc:
        print(f"sweep: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the API failed: nothing is known gone
        print(f"sweep: the Kubernetes API failed: {said(exc)}", file=sys.stderr)
        return 1
    if left:
        print(f"still there after {args.wait:.0f} s: {', '.join(left)}", file=sys.stderr)
        return 1
    print(f"nothing of run {args.run} is left in namespace {args.namespace}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
