"""The exact commands (as `Step`s) the `gce` backend runs (its settings: gce/options.py).

Names per parallel slot: slot 0 uses the configured prefixes as they are (so a
config mirroring the CI job gets `kubemark-5000-kubemark-master`), slot N
appends `-N`. Each slot has its own base cluster and kubeconfig, because the
kubemark scripts put the hollow nodes in the fixed namespace `kubemark` of the
base cluster: two kubemark clusters cannot share one base.

The kubemark master's name: start-kubemark.sh sources
cluster/kubemark/gce/config-default.sh, then cluster/gce/util.sh, whose
cluster/gce/config-default.sh sets `INSTANCE_PREFIX="${KUBE_GCE_INSTANCE_PREFIX:-kubernetes}"`
over whatever INSTANCE_PREFIX was, then the kubemark config again
(`MASTER_NAME="${INSTANCE_PREFIX}-kubemark-master"`). So the master is named
after KUBE_GCE_INSTANCE_PREFIX; the CI job (test-infra f57ef50d,
scenarios/kubernetes_e2e.py) set INSTANCE_PREFIX, KUBE_GCE_INSTANCE_PREFIX and
KUBE_GCE_NETWORK all to the cluster name, and so does this backend.

The hollow-node image: start-kubemark.sh runs `make gcloudpush` in
cluster/images/kubemark, which pushes `${CONTAINER_REGISTRY}/${PROJECT}/kubemark`
(tag latest), and the hollow-node pods pull that name. Parallel slots building
different commits would overwrite each other's image, so each slot pushes to a
registry host of its own (gcr.io, us.gcr.io, eu.gcr.io, asia.gcr.io are separate
repositories of the same project); a fifth slot is refused.
"""

from __future__ import annotations

from pathlib import Path

# Re-exported (the `as` form): the backend, rehearsal and twin read them from here.
from bisector.backends.gce.options import KEYS as KEYS  # noqa: PLC0414
from bisector.backends.gce.options import GceSettings as GceSettings  # noqa: PLC0414
from bisector.backends.steps import Step, step
from bisector.errors import ConfigError

# One registry host per parallel slot (see the module docstring).
REGISTRY_HOSTS = ("gcr.io", "us.gcr.io", "eu.gcr.io", "asia.gcr.io")


def _suffix(slot: int) -> str:
    return "" if slot == 0 else f"-{slot}"


def kubemark_prefix(cfg: GceSettings, slot: int) -> str:
    return cfg.instance_prefix + _suffix(slot)


def base_prefix(cfg: GceSettings, slot: int) -> str:
    return cfg.base_instance_prefix + _suffix(slot)


def master_name(cfg: GceSettings, slot: int) -> str:
    return f"{kubemark_prefix(cfg, slot)}-kubemark-master"


def network(cfg: GceSettings, slot: int) -> str:
    return cfg.network or base_prefix(cfg, slot)


def kubeconfig(cfg: GceSettings, slot: int) -> Path:
    return cfg.run_dir / "gce" / f"base-{slot}.kubeconfig"


def kubemark_kubeconfig(worktree: Path) -> Path:
    """Where start-kubemark.sh writes the kubemark master's admin credentials."""
    return worktree / "test" / "kubemark" / "resources" / "kubeconfig.kubemark"


def registry(slot: int) -> str:
    if slot >= len(REGISTRY_HOSTS):
        raise ConfigError(
            f"the gce backend runs at most {len(REGISTRY_HOSTS)} parallel slots: the 2017 "
            "start-kubemark.sh pushes ${CONTAINER_REGISTRY}/${PROJECT}/kubemark:latest and "
            f"each slot needs a registry host of its own ({', '.join(REGISTRY_HOSTS)}); "
            f"lower [search] parallel to {len(REGISTRY_HOSTS)} or less"
        )
    return REGISTRY_HOSTS[slot]


def base_id(cfg: GceSettings, slot: int) -> str:
    return f"gce/base/{base_prefix(cfg, slot)}"


def kubemark_id(cfg: GceSettings, slot: int) -> str:
    return f"gce/kubemark/{kubemark_prefix(cfg, slot)}"


def _common_env(cfg: GceSettings, slot: int) -> dict[str, str]:
    return {
        "KUBERNETES_PROVIDER": "gce",
        "PROJECT": cfg.project,
        "KUBE_GCE_ZONE": cfg.zone,
        "KUBE_GCE_NETWORK": network(cfg, slot),
        "KUBECONFIG": str(kubeconfig(cfg, slot)),
    }


def base_env(cfg: GceSettings, slot: int) -> dict[str, str]:
    env = _common_env(cfg, slot)
    env["KUBE_GCE_INSTANCE_PREFIX"] = base_prefix(cfg, slot)
    if cfg.network is None:
        # kube-up.sh creates the slot's network; kube-down.sh deletes it only with
        # KUBE_DELETE_NETWORK=true (cluster/gce/config-default.sh defaults it to false),
        # and GCE allows 5 networks per project by default. A configured `network` is the
        # user's own and stays.
        env["KUBE_DELETE_NETWORK"] = "true"
    env["NUM_NODES"] = str(cfg.num_nodes)
    env["NODE_SIZE"] = cfg.node_size
    if cfg.master_size:
        env["MASTER_SIZE"] = cfg.master_size
    return {**env, **cfg.env}


def kubemark_env(cfg: GceSettings, slot: int) -> dict[str, str]:
    env = _common_env(cfg, slot)
    env.update(
        {
            "USE_KUBEMARK": "true",
            # The master is named after KUBE_GCE_INSTANCE_PREFIX (module docstring).
            "KUBE_GCE_INSTANCE_PREFIX": kubemark_prefix(cfg, slot),
            "INSTANCE_PREFIX": kubemark_prefix(cfg, slot),
            "CONTAINER_REGISTRY": registry(slot),
            "NODE_SIZE": cfg.node_size,
            "KUBEMARK_NUM_NODES": str(cfg.kubemark_num_nodes),
            "KUBEMARK_MASTER_SIZE": cfg.kubemark_master_size,
            # kubetest exported these for start/stop-kubemark.sh; 2017 configs read them.
            "NUM_NODES": str(cfg.kubemark_num_nodes),
            "MASTER_SIZE": cfg.kubemark_master_size,
            "API_SERVER_TEST_LOG_LEVEL": cfg.api_server_log_level,
        }
    )
    return {**env, **cfg.env}


def quick_release(cfg: GceSettings, worktree: Path) -> Step:
    return step("make", "quick-release", cwd=worktree, timeout=cfg.build_timeout)


def kube_up(cfg: GceSettings, checkout: Path, slot: int, path: str | None = None) -> Step:
    """kube-up.sh; `path`: its PATH, with the backend's gcloud wrapper first (gce_adapt)."""
    env = base_env(cfg, slot)
    if path is not None:
        env["PATH"] = path
    return step("./cluster/kube-up.sh", cwd=checkout, env=env, timeout=cfg.up_timeout)


def kube_down(cfg: GceSettings, checkout: Path, slot: int) -> Step:
    return step(
        "./cluster/kube-down.sh", cwd=checkout, env=base_env(cfg, slot), timeout=cfg.down_timeout
    )


def start_kubemark(cfg: GceSettings, worktree: Path, slot: int) -> Step:
    return step(
        "./test/kubemark/start-kubemark.sh",
        cwd=worktree, env=kubemark_env(cfg, slot), timeout=cfg.start_timeout,
    )  # fmt: skip


def stop_kubemark(cfg: GceSettings, worktree: Path, slot: int) -> Step:
    return step(
        "./test/kubemark/stop-kubemark.sh",
        cwd=worktree, env=kubemark_env(cfg, slot), timeout=cfg.stop_timeout,
    )  # fmt: skip


def scp_logs(cfg: GceSettings, slot: int, log_dir: Path) -> Step:
    return step(
        "gcloud", "compute", "scp", "--project", cfg.project, "--zone", cfg.zone,
        f"{master_name(cfg, slot)}:/var/log/kube-apiserver.log*", f"{log_dir}/",
        timeout=cfg.scp_timeout,
    )  # fmt: skip


def apiserver_metrics(cfg: GceSettings, slot: int) -> Step:
    """The kubemark master's apiserver /metrics, read on the master over ssh: the 2017
    kubemark master serves the insecure port 8080 (test/kubemark/resources/
    start-kubemark-master.sh sets --insecure-bind-address, the port is the default)."""
    return step(
        "gcloud", "compute", "ssh", "--project", cfg.project, "--zone", cfg.zone,
        master_name(cfg, slot), "--command", "curl -sSf http://127.0.0.1:8080/metrics",
        timeout=cfg.scp_timeout,
    )  # fmt: skip


def scp_current_log(cfg: GceSettings, slot: int, into: Path) -> Step:
    """The live log file alone (not its rotations), for a look during the warmup."""
    return step(
        "gcloud", "compute", "scp", "--project", cfg.project, "--zone", cfg.zone,
        f"{master_name(cfg, slot)}:/var/log/kube-apiserver.log", f"{into}/",
        timeout=cfg.scp_timeout,
    )  # fmt: skip


def kubemark_fallback(cfg: GceSettings, slot: int) -> list[Step]:
    """What stop-kubemark.sh deletes, for a cleanup whose worktree is gone."""
    master = master_name(cfg, slot)
    where = ("--project", cfg.project, "--zone", cfg.zone, "--quiet")
    t = cfg.stop_timeout
    return [
        step("kubectl", "--kubeconfig", kubeconfig(cfg, slot), "delete", "namespace", "kubemark",
             "--ignore-not-found", timeout=t),
        step("gcloud", "compute", "instances", "delete", master, *where, timeout=t),
        step("gcloud", "compute", "disks", "delete", f"{master}-pd", *where, timeout=t),
        # Created when EVENT_PD=true (the 2017 scale job); "not found" otherwise.
        step("gcloud", "compute", "disks", "delete", f"{master}-event-pd", *where, timeout=t),
        step("gcloud", "compute", "addresses", "delete", f"{master}-ip", "--project", cfg.project,
             "--region", cfg.region, "--quiet", timeout=t),
        step("gcloud", "compute", "firewall-rules", "delete",
             f"{master}-https", "--project", cfg.project,
             "--quiet", timeout=t),
    ]  # fmt: skip


def base_fallback(cfg: GceSettings, slot: int) -> list[Step]:
    """What kube-down.sh deletes (cluster/gce/util.sh kube-down of 7043372 and 1444d25, as
    it ran on the GCE twin), for a cleanup whose base checkout is gone."""
    prefix, net, project = base_prefix(cfg, slot), network(cfg, slot), cfg.project
    zone = ("--project", project, "--zone", cfg.zone, "--quiet")
    t = cfg.down_timeout
    rules = [f"{prefix}-master-https", f"{prefix}-master-etcd", f"{prefix}-minion-all"]
    steps = [
        step("gcloud", "compute", "instance-groups", "managed", "delete",
             f"{prefix}-minion-group", *zone, timeout=t),
        step("gcloud", "compute", "instance-templates", "delete", f"{prefix}-minion-template",
             "--project", project, "--quiet", timeout=t),
        step("gcloud", "compute", "instances", "delete", f"{prefix}-master", *zone,
             "--delete-disks", "all", timeout=t),
        step("gcloud", "compute", "disks", "delete", f"{prefix}-master-pd", *zone, timeout=t),
        step("gcloud", "compute", "addresses", "delete", f"{prefix}-master-ip", "--project",
             project, "--region", cfg.region, "--quiet", timeout=t),
    ]  # fmt: skip
    if cfg.network is None:  # the network and its rules are the slot's own (kube-up made them)
        rules += [f"{prefix}-default-internal-master", f"{prefix}-default-internal-node",
                  f"{net}-default-ssh"]  # fmt: skip
    steps += [
        step("gcloud", "compute", "firewall-rules", "delete", rule, "--project", project,
             "--quiet", timeout=t)
        for rule in rules
    ]  # fmt: skip
    # The route controller's pod routes (`${INSTANCE_PREFIX}-<uuid>`) block the network's delete.
    # pipefail: a list that fails (auth, API) must fail the step, not read as "no routes".
    routes = (
        f"set -o pipefail; gcloud compute routes list --project {project} "
        f"--regexp '{prefix}-.{{8}}-.{{4}}-.{{4}}-.{{4}}-.{{12}}' --format='value(name)' "
        f"| xargs -r gcloud compute routes delete --project {project} --quiet"
    )
    steps.append(step("bash", "-c", routes, timeout=t))
    if cfg.network is None:
        steps.append(step("gcloud", "compute", "networks", "delete", net, "--project", project,
                          "--quiet", timeout=t))  # fmt: skip
    return steps
