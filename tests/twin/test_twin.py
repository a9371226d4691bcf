"""The GCE twin's shims, called as the 2017 scripts call them (runs in CI: no checkout)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bisector.twin import UNMODELLED_EXIT, TwinConfig, install
from bisector.twin.state import Home

P = ("--project", "twin-project")


@pytest.fixture
def twin(tmp_path: Path) -> Home:
    return install(tmp_path / "twin", TwinConfig(bad_if_contains=("BAD",)))


def run(twin: Home, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{twin.bin}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_an_unmodelled_call_fails_loudly_and_is_recorded(twin: Home) -> None:
    done = run(twin, "gcloud", "compute", "target-pools", "create", "x", *P)
    assert done.returncode == UNMODELLED_EXIT
    assert "bisector twin: unmodelled call: gcloud compute target-pools create x" in done.stderr
    (call,) = twin.calls()
    assert call["code"] == UNMODELLED_EXIT and call["argv"][:3] == [
        "compute",
        "target-pools",
        "create",
    ]
    assert run(twin, "ssh", "somehost", "true").returncode == UNMODELLED_EXIT
    assert run(twin, "make", "all").returncode == UNMODELLED_EXIT


def test_addresses_answer_the_format_queries_of_the_scripts(twin: Home) -> None:
    """hyperhq/kubernetes 7043372, test/kubemark/gce/util.sh: `gcloud compute addresses
    describe "${MASTER_NAME}-ip" --project --region -q --format='value(address)'`."""
    where = (*P, "--region", "us-central1")
    assert (
        run(twin, "gcloud", "compute", "addresses", "create", "m-ip", *where, "-q").returncode == 0
    )
    again = run(twin, "gcloud", "compute", "addresses", "create", "m-ip", *where, "-q")
    assert again.returncode == 1 and "already exists" in again.stderr  # the scripts grep this
    ip = run(twin, "gcloud", "compute", "addresses", "describe", "m-ip", *where, "-q",
             "--format=value(address)").stdout.strip()  # fmt: skip
    assert ip.startswith("203.0.113.")
    assert (
        run(twin, "gcloud", "compute", "addresses", "delete", "m-ip", *where, "--quiet").returncode
        == 0
    )
    gone = run(twin, "gcloud", "compute", "addresses", "delete", "m-ip", *where, "--quiet")
    assert gone.returncode == 1 and "was not found" in gone.stderr  # cleanup: "already gone"
    bad = run(twin, "gcloud", "compute", "addresses", "list", *P, "--format=yaml(name)")
    assert bad.returncode == UNMODELLED_EXIT


def test_managed_group_lists_its_instances_and_takes_them_down(twin: Home) -> None:
    """cluster/gce/util.sh (7043372) detect-node-names: `instance-groups managed list
    --regexp "${NODE_INSTANCE_PREFIX}-.+" --format='value(instanceGroup)'`, then
    `list-instances ... --format='value(instance)'`."""
    z = ("--zone", "us-central1-f")
    run(twin, "gcloud", "compute", "networks", "create", *P, "k", "--subnet-mode=auto")
    run(twin, "gcloud", "compute", "instance-templates", "create", "k-minion-template", *P,
        "--machine-type", "n1-standard-8", "--network", "k", "--tags", "k-minion")  # fmt: skip
    done = run(twin, "gcloud", "compute", "instance-groups", "managed", "create", "k-minion-group",
               *P, *z, "--base-instance-name", "k-minion-group", "--size", "3",
               "--template", "k-minion-template")  # fmt: skip
    assert done.returncode == 0, done.stderr
    groups = run(twin, "gcloud", "compute", "instance-groups", "managed", "list", "--zones",
                 "us-central1-f", *P, "--regexp", "k-minion-.+",
                 "--format=value(instanceGroup)")  # fmt: skip
    assert groups.stdout == "k-minion-group\n"
    names = run(twin, "gcloud", "compute", "instance-groups", "managed", "list-instances",
                "k-minion-group", *z, *P, "--format=value(instance)").stdout.split()  # fmt: skip
    assert names == ["k-minion-group-0000", "k-minion-group-0001", "k-minion-group-0002"]
    nat_ip = "--format=value(networkInterfaces[0].accessConfigs[0].natIP)"
    nat = run(twin, "gcloud", "compute", "instances", "describe", *P, *z, names[0], nat_ip)
    assert nat.stdout.startswith("203.0.113.")
    run(twin, "gcloud", "compute", "instance-groups", "managed", "delete", *P, *z, "--quiet",
        "k-minion-group")  # fmt: skip
    state = twin.load()
    assert not state.kind("instances") and not state.kind("disks")


def _tiny_tree(root: Path) -> Path:
    """Our own stand-in of a kubernetes tree: quick-release only needs build/release.sh."""
    (root / "build").mkdir(parents=True)
    (root / "build" / "release.sh").write_text("#!/bin/sh\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "good"], cwd=root, check=True)
    return root


def test_quick_release_leaves_the_2017_layout_with_the_candidates_profile(
    tmp_path: Path,
) -> None:
    """The layout of build/release.sh + build/lib/release.sh at kubernetes 7043372."""
    tree = _tiny_tree(tmp_path / "k8s")
    good = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
                    "--allow-empty", "-m", "culprit"], cwd=tree, check=True)  # fmt: skip
    culprit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
    twin = install(tmp_path / "twin", TwinConfig(bad_if_contains=(culprit,)))
    assert run(twin, "make", "quick-release", cwd=tree).returncode == 0
    for rel in ("_output/release-tars/kubernetes-server-linux-amd64.tar.gz",
                "_output/release-tars/kubernetes-salt.tar.gz",
                "_output/release-tars/kubernetes-manifests.tar.gz",
                "_output/dockerized/bin/linux/amd64/kubemark",
                "_output/dockerized/bin/linux/amd64/kubectl",
                "_output/release-stage/test/kubernetes/platforms/linux/amd64/kubemark",
                ):  # fmt: skip
        assert (tree / rel).is_file(), rel
    kubemark = json.loads((tree / "_output/dockerized/bin/linux/amd64/kubemark").read_text())
    assert kubemark["bad_because_of"] == [culprit] and kubemark["profile"]["trigger_index"] is False
    assert not (
        tree / "_output/release-stage/server/linux-amd64/kubernetes/server/bin/kubemark"
    ).exists()
    subprocess.run(["git", "checkout", "-q", good], cwd=tree, check=True)
    assert run(twin, "make", "quick-release", cwd=tree).returncode == 0
    kubemark = json.loads((tree / "_output/dockerized/bin/linux/amd64/kubemark").read_text())
    assert kubemark["bad_because_of"] == [] and kubemark["profile"] == {}


def test_the_kubemark_image_targets_run_the_real_make_and_hand_back_what_it_did(
    twin: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start-kubemark.sh runs `make gcloudpush` in cluster/images/kubemark (kubernetes
    7043372): the twin runs the real make there, through bisector.proc, and the script gets
    make's output and exit code as if it had run make itself."""
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):  # under `make test`: no "Entering dir"
        monkeypatch.delenv(name, raising=False)
    images = tmp_path / "k8s" / "cluster" / "images" / "kubemark"
    images.mkdir(parents=True)
    (images / "Makefile").write_text(
        "build:\n\t@echo built $(REGISTRY)\n\t@echo pulling base >&2\n"
        "push:\n\t@echo pushing; exit 3\n"
    )
    built = run(twin, "make", "build", "REGISTRY=gcr.io/p", cwd=images)
    assert built.returncode == 0
    assert built.stdout == "built gcr.io/p\n" and built.stderr == "pulling base\n"
    pushed = run(twin, "make", "push", cwd=images)
    assert pushed.returncode == 2  # make's own code for a failed recipe
    assert pushed.stdout == "pushing\n" and "Error 3" in pushed.stderr
    assert [(c["tool"], c["argv"], c["code"]) for c in twin.calls()] == [
        ("make", ["build", "REGISTRY=gcr.io/p"], 0),
        ("make", ["push"], 2),
    ]


_HOLLOW = """apiVersion: v1
kind: ReplicationController
metadata:
  name: hollow-node
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
      - name: hollow-kubelet
        command: ["--apiserver-override=https://{ip}:443"]
        resources:
          requests:
            cpu: 70m
            memory: 100M
      - name: hollow-proxy
        resources:
          requests:
            cpu: 20m
            memory: 100Mi
"""


def test_base_cluster_schedules_hollow_nodes_by_their_requests(twin: Home, tmp_path: Path) -> None:
    """Pods that do not fit stay Pending and never register with the kubemark master."""
    z = ("--zone", "us-central1-f")
    run(twin, "gcloud", "compute", "networks", "create", *P, "k")
    run(
        twin,
        "gcloud",
        "compute",
        "addresses",
        "create",
        "k-master-ip",
        *P,
        "--region",
        "us-central1",
    )
    ip = run(twin, "gcloud", "compute", "addresses", "describe", "k-master-ip", *P, "--region",
             "us-central1", "--format=value(address)").stdout.strip()  # fmt: skip
    run(twin, "gcloud", "compute", "instances", "create", "k-master", *P, *z, "--address", ip,
        "--machine-type", "n1-standard-4", "--network", "k")  # fmt: skip
    run(twin, "gcloud", "compute", "instance-templates", "create", "k-minion-template", *P,
        "--machine-type", "n1-standard-8", "--network", "k", "--tags", "k-minion")  # fmt: skip
    run(twin, "gcloud", "compute", "instance-groups", "managed", "create", "k-minion-group", *P,
        *z, "--base-instance-name", "k-minion-group", "--size", "1", "--template",
        "k-minion-template")  # fmt: skip
    config = tmp_path / "kubeconfig"
    for argv in (("config", "set-cluster", "c", f"--server=https://{ip}"),
                 ("config", "set-credentials", "c", "--token=t"),
                 ("config", "set-context", "c", "--cluster=c", "--user=c"),
                 ("config", "use-context", "c")):  # fmt: skip
        assert run(twin, "kubectl", f"--kubeconfig={config}", *argv).returncode == 0
    assert config.stat().st_mode & 0o777 == 0o600
    nodes = run(twin, "kubectl", f"--kubeconfig={config}", "get", "nodes").stdout
    assert "k-master   Ready,SchedulingDisabled" in nodes and "k-minion-group-0000   Ready" in nodes
    (tmp_path / "ns.json").write_text('{"kind": "Namespace", "metadata": {"name": "kubemark"}}')
    (tmp_path / "hollow.yaml").write_text(_HOLLOW.format(replicas=100, ip="198.51.100.7"))
    kubectl = ("kubectl", f"--kubeconfig={config}")
    assert run(twin, *kubectl, "create", "-f", str(tmp_path / "ns.json")).returncode == 0
    done = run(
        twin, *kubectl, "create", "-f", str(tmp_path / "hollow.yaml"), "--namespace=kubemark"
    )
    assert done.returncode == 0, done.stderr
    (placed,) = twin.scheduling()
    # n1-standard-8: 7800m after kube-proxy and fluentd; 90m a pod -> 86 of 100
    assert (placed["replicas"], placed["scheduled"], placed["pending"]) == (100, 86, 14)
    assert twin.load().kind("clusters")["kubemark/198.51.100.7"]["ready"] == 86
    assert run(twin, *kubectl, "delete", "-f", str(tmp_path / "ns.json")).returncode == 0
    assert "kubemark/198.51.100.7" not in twin.load().kind("clusters")
