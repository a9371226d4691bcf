"""The `batch/v1` Job of one evaluation, as the official client's models.

One pod, never restarted (`backoffLimit: 0`, `restartPolicy: Never`): a retried pod
would be a second evaluation the run did not ask for. Its container runs
`bisector evaluate` with the evaluation's spec in its environment. The pod failure
policy fails the Job at once, with the rule's message, when the pod was disrupted
(evicted, preempted, its node lost: `DisruptionTarget`) or its command failed (any exit
code but 0); with a policy the Job also waits for the pod to be terminal before it
fails, so the pod's own teardown has run. A node that stops answering is given up after
`node_lost_after` (the NoExecute tolerations), not the cluster's default five minutes.
Every Job and pod carries the run's label: a rerun finds and adopts them, `close` and
`bisector cleanup` delete them by it.
"""

from __future__ import annotations

from kubernetes import client as k

from bisector.executors.kubernetes.settings import KubernetesSettings
from bisector.executors.spec import SPEC_ENV, EvaluationSpec

LABEL_RUN = "bisector.io/run"  # the run's id (bisector.executors.kubernetes.runid)
LABEL_EVALUATION = "bisector.io/evaluation"  # the evaluation's directory name: NNN-<commit>
LABEL_COMMIT = "bisector.io/commit"
LABEL_PHASE = "bisector.io/phase"
CONTAINER = "main"
WORK = "/work"  # the pod's scratch (an emptyDir): the checkout, the run directory
NODE_LOST_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def job_name(run_id: str, evaluation: str) -> str:
    """`bisector-<run>-<NNN>-<commit>`: a DNS label, and at most 63 characters (the
    `job-name` label its pods get)."""
    return f"bisector-{run_id}-{evaluation}"[:63].rstrip("-")


def run_selector(run_id: str) -> str:
    return f"{LABEL_RUN}={run_id}"


def job_for(cfg: KubernetesSettings, spec: EvaluationSpec, run_id: str, evaluation: str) -> k.V1Job:
    labels = {
        LABEL_RUN: run_id,
        LABEL_EVALUATION: evaluation,
        LABEL_COMMIT: spec.commit,
        LABEL_PHASE: spec.phase,
    }
    env = [k.V1EnvVar(name=SPEC_ENV, value=spec.to_json())]
    env += [k.V1EnvVar(name=name, value=value) for name, value in sorted(cfg.pod_env.items())]
    mounts = [k.V1VolumeMount(name="work", mount_path=WORK)]
    volumes = [k.V1Volume(name="work", empty_dir=k.V1EmptyDirVolumeSource())]
    if cfg.cache_mounts:
        for path, sub in sorted(cfg.cache_mounts.items()):
            mounts.append(k.V1VolumeMount(name="cache", mount_path=path, sub_path=sub))
        volumes.append(_cache_volume(cfg))
    if cfg.shm_size:
        mounts.append(k.V1VolumeMount(name="shm", mount_path="/dev/shm"))
        volumes.append(
            k.V1Volume(
                name="shm",
                empty_dir=k.V1EmptyDirVolumeSource(medium="Memory", size_limit=cfg.shm_size),
            )
        )
    container = k.V1Container(
        name=CONTAINER,
        image=cfg.image,
        image_pull_policy=cfg.image_pull_policy,
        command=["bisector"],
        args=["evaluate", "--work", WORK],
        env=env,
        resources=k.V1ResourceRequirements(
            requests=dict(cfg.requests) or None, limits=dict(cfg.limits) or None
        ),
        volume_mounts=mounts,
        working_dir=WORK,
    )
    lost = int(cfg.node_lost_after)
    pod = k.V1PodSpec(
        restart_policy="Never",
        containers=[container],
        volumes=volumes,
        termination_grace_period_seconds=int(cfg.termination_grace),
        service_account_name=cfg.service_account or None,
        automount_service_account_token=False,  # `bisector evaluate` never calls the API
        node_selector=dict(cfg.node_selector) or None,
        dns_policy="None" if cfg.dns_nameservers else None,
        dns_config=_dns(cfg),
        tolerations=[
            k.V1Toleration(
                key=taint, operator="Exists", effect="NoExecute", toleration_seconds=lost
            )
            for taint in NODE_LOST_TAINTS
        ],
    )
    policy = k.V1PodFailurePolicy(
        rules=[
            k.V1PodFailurePolicyRule(
                action="FailJob",
                on_pod_conditions=[
                    k.V1PodFailurePolicyOnPodConditionsPattern(
                        type="DisruptionTarget", status="True"
                    )
                ],
            ),
            k.V1PodFailurePolicyRule(
                action="FailJob",
                on_exit_codes=k.V1PodFailurePolicyOnExitCodesRequirement(
                    container_name=CONTAINER, operator="NotIn", values=[0]
                ),
            ),
        ]
    )
    return k.V1Job(
        api_version="batch/v1",
        kind="Job",
        metadata=k.V1ObjectMeta(name=job_name(run_id, evaluation), labels=labels),
        spec=k.V1JobSpec(
            backoff_limit=0,
            active_deadline_seconds=int(cfg.deadline),
            pod_failure_policy=policy,
            template=k.V1PodTemplateSpec(
                metadata=k.V1ObjectMeta(labels=labels),
                spec=pod,
            ),
        ),
    )


def _dns(cfg: KubernetesSettings) -> k.V1PodDNSConfig | None:
    """The pods' own nameservers: a cluster without DNS hands pods a nameserver they cannot
    reach, and every lookup (a hollow node's own name, each status update) waits for its
    timeouts; one that refuses at once (127.0.0.1 in the pod) fails them at once."""
    if not cfg.dns_nameservers:
        return None
    return k.V1PodDNSConfig(
        nameservers=list(cfg.dns_nameservers),
        options=[
            k.V1PodDNSConfigOption(name="timeout", value="1"),
            k.V1PodDNSConfigOption(name="attempts", value="1"),
        ],
    )


def _cache_volume(cfg: KubernetesSettings) -> k.V1Volume:
    if cfg.cache_claim:
        return k.V1Volume(
            name="cache",
            persistent_volume_claim=k.V1PersistentVolumeClaimVolumeSource(
                claim_name=cfg.cache_claim
            ),
        )
    return k.V1Volume(
        name="cache",
        host_path=k.V1HostPathVolumeSource(path=cfg.cache_host_path, type="DirectoryOrCreate"),
    )
