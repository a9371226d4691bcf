"""What must hold before a run sends evaluations to a cluster (`bisector doctor`, and the
run's preflight, which refuses the first that does not, before anything starts):

- the API answers (the kubeconfig and context, or the pod's service account);
- the namespace exists (listing Jobs in a missing one answers 200 with nothing, so it is
  read: 404);
- this identity may do what the executor does there: create, get, list, watch and delete
  Jobs, get, list and watch pods and get their logs (SelfSubjectAccessReviews);
- the image: on a node when the pull policy is Never (nodes list the images they hold);
  otherwise the first pod pulls it, which only a pod can show;
- the bucket results come back through, when it is one.
"""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client as k

from bisector.backends.registry import Finding
from bisector.errors import BisectorError
from bisector.executors.handback import POD_LOG
from bisector.executors.kubernetes.api import KubeApi, name_of, said
from bisector.executors.kubernetes.settings import KubernetesSettings

# (verb, group, resource, subresource): every call the executor and its sweep make.
NEEDED = (
    ("create", "batch", "jobs", ""),
    ("get", "batch", "jobs", ""),
    ("list", "batch", "jobs", ""),
    ("watch", "batch", "jobs", ""),
    ("delete", "batch", "jobs", ""),
    ("get", "", "pods", ""),
    ("list", "", "pods", ""),
    ("watch", "", "pods", ""),
    ("get", "", "pods", "log"),
)


def _shown(verb: str, group: str, resource: str, sub: str) -> str:
    what = f"{resource}/{sub}" if sub else resource
    return f"{verb} {what}.{group}" if group else f"{verb} {what}"


def image_names(name: str) -> set[str]:
    """The names a node may list an image under (a short name is docker.io's library)."""
    names = {name}
    ref = name if ":" in name.rsplit("/", 1)[-1] or "@" in name else f"{name}:latest"
    names.add(ref)
    first = ref.split("/", 1)[0]
    if "/" not in ref:
        names.add(f"docker.io/library/{ref}")
    elif "." not in first and ":" not in first and first != "localhost":
        names.add(f"docker.io/{ref}")
    return names


def check(
    cfg: KubernetesSettings, api: Callable[[KubernetesSettings], KubeApi] = KubeApi.of
) -> list[Finding]:
    found: list[Finding] = []
    ns = cfg.namespace
    try:
        kube = api(cfg)
    except BisectorError as exc:
        return [Finding(False, "kubernetes API", str(exc))]
    exists: bool | None = None
    try:
        exists = kube.namespace_exists()
    except k.ApiException as exc:  # an answer: the API is there, the namespace not readable
        found.append(Finding(True, "kubernetes API", f"answers ({kube.server})"))
        found.append(Finding(False, "namespace", f"cannot read namespace {ns}: {said(exc)}"))
    except Exception as exc:  # the client's errors: nothing answers
        return [
            Finding(
                False,
                "kubernetes API",
                f"no answer from {kube.server} ({said(exc)}); check [executor.kubernetes] "
                "kubeconfig and context",
            )
        ]
    else:
        found.append(Finding(True, "kubernetes API", f"answers ({kube.server})"))
    if exists is False:
        found.append(
            Finding(
                False,
                "namespace",
                f"namespace {ns} does not exist: create it (kubectl create namespace {ns}) "
                "or set [executor.kubernetes] namespace",
            )
        )
        return found
    if exists:
        found.append(Finding(True, "namespace", f"{ns} exists"))
    found.append(_permissions(kube))
    found.append(_image(kube, cfg))
    if cfg.artifacts != POD_LOG:
        found.append(_bucket(cfg.artifacts))
    return found


def _permissions(kube: KubeApi) -> Finding:
    try:
        missing = [_shown(*n) for n in NEEDED if not kube.allowed(n[0], n[2], n[1], n[3])]
    except Exception as exc:
        return Finding(False, "permissions", f"cannot ask (SelfSubjectAccessReview): {said(exc)}")
    if missing:
        return Finding(
            False,
            "permissions",
            f"in namespace {kube.namespace} this identity may not: {', '.join(missing)}; "
            "bind it a Role that allows them (docs/jobs.md)",
        )
    return Finding(True, "permissions", f"jobs, pods and pods/log in {kube.namespace}")


def _image(kube: KubeApi, cfg: KubernetesSettings) -> Finding:
    try:
        nodes = kube.nodes()
    except Exception as exc:
        return Finding(
            cfg.image_pull_policy != "Never",
            "image",
            f"cannot list nodes to look for {cfg.image} ({said(exc)})",
        )
    wanted = image_names(cfg.image)
    holding = [
        name_of(node) for node in nodes if any(wanted & set(i.names or []) for i in _images(node))
    ]
    if holding:
        return Finding(True, "image", f"{cfg.image} is on node(s) {', '.join(holding)}")
    if cfg.image_pull_policy == "Never":
        return Finding(
            False,
            "image",
            f"{cfg.image} is on none of the {len(nodes)} node(s) and image_pull_policy is "
            "Never: every pod would wait in ErrImageNeverPull; load it on the nodes (or let "
            "them pull it: image_pull_policy = IfNotPresent)",
        )
    return Finding(
        True,
        "image",
        f"{cfg.image} is on no node yet: the first pod pulls it ({cfg.image_pull_policy})",
    )


def _bucket(destination: str) -> Finding:
    from google.api_core import exceptions as gexc

    from bisector.ci import gcs
    from bisector.upload import parse_destination

    bucket, _ = parse_destination(destination)
    try:
        exists = gcs.retrying(lambda: gcs.client().bucket(bucket).exists(timeout=gcs.TIMEOUT))
    except (gexc.GoogleAPIError, OSError, BisectorError) as exc:
        return Finding(False, "artifacts", f"cannot reach gs://{bucket}: {exc}")
    if not exists:
        return Finding(False, "artifacts", f"bucket gs://{bucket} does not exist; create it")
    return Finding(True, "artifacts", f"results come back through {destination}")


def _images(node: k.V1Node) -> list[k.V1ContainerImage]:
    return list((node.status.images if node.status else None) or [])
