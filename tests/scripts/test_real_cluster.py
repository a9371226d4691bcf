"""scripts/real_cluster.py: what each part of the one-node cluster is given, and the pieces
of its teardown that can run without a cluster (finding its processes by tag, its mounts,
setting sysctls back). The cluster itself is checked where it runs (docs/jobs-cluster.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_cluster", ROOT / "scripts/real_cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["real_cluster"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


rc = _script()
PORTS = rc.Ports(23790, 23800, 26443, 20257, 20259, 20250, 20248)


def test_containerd_lowers_no_oom_score_and_keeps_everything_under_the_cluster_dir(
    tmp_path: Path,
) -> None:
    layout = rc.Layout(tmp_path)
    config = tomllib.loads(rc.containerd_config(layout))
    assert config["version"] == 2
    for path in (config["root"], config["state"], config["grpc"]["address"]):
        assert Path(path).is_relative_to(tmp_path)
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    # runc without CAP_SYS_RESOURCE: "nsexec: failed to update /proc/self/oom_score_adj"
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == rc.PAUSE_IMAGE
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert Path(cri["cni"]["conf_dir"]).is_relative_to(tmp_path)


def test_the_pod_network_needs_no_iptables_rule_and_keeps_its_addresses_under_the_dir(
    tmp_path: Path,
) -> None:
    conf = json.loads(rc.cni_conflist(rc.Layout(tmp_path)))
    (bridge,) = conf["plugins"]
    assert (bridge["type"], bridge["bridge"], bridge["ipMasq"]) == ("bridge", rc.BRIDGE, False)
    assert Path(bridge["ipam"]["dataDir"]).is_relative_to(tmp_path)
    assert conf["name"] == rc.NETWORK


def test_kubelet_settings_that_this_host_needs(tmp_path: Path) -> None:
    layout = rc.Layout(tmp_path)
    config = json.loads(rc.kubelet_config(layout, PORTS, "192.0.2.2"))
    assert config["kind"] == "KubeletConfiguration"
    assert config["failCgroupV1"] is False  # cgroup v1 here; 1.31+ refuses it by default
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["makeIPTablesUtilChains"] is False
    assert config["containerRuntimeEndpoint"] == f"unix://{layout.containerd_socket}"
    assert (config["address"], config["port"]) == ("192.0.2.2", PORTS.kubelet)
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authorization"]["mode"] == "Webhook"
    for key in ("podLogsDir", "volumePluginDir"):
        assert Path(config[key]).is_relative_to(tmp_path)


def test_etcd_sends_progress_notifications_for_1_32s_watch_list(tmp_path: Path) -> None:
    cmd = rc.etcd_cmd(Path("/bin/etcd"), rc.Layout(tmp_path), PORTS)
    assert "--experimental-watch-progress-notify-interval=200ms" in cmd
    assert f"--listen-client-urls=http://127.0.0.1:{PORTS.etcd_client}" in cmd


def test_the_apiserver_serves_on_loopback_and_reaches_the_kubelet_by_its_address(
    tmp_path: Path,
) -> None:
    cmd = rc.apiserver_cmd(Path("/bin/kube-apiserver"), rc.Layout(tmp_path), PORTS, "192.0.2.2")
    assert "--bind-address=127.0.0.1" in cmd
    assert "--advertise-address=192.0.2.2" in cmd
    assert "--authorization-mode=Node,RBAC" in cmd
    assert "--kubelet-preferred-address-types=InternalIP,Hostname" in cmd


def test_kubeconfig_is_json_yaml_with_the_ca_and_token(tmp_path: Path) -> None:
    text = rc.kubeconfig("https://127.0.0.1:6443", tmp_path / "ca.crt", "tok", "admin")
    config = json.loads(text)
    assert config["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "ca.crt")
    assert config["users"][0]["user"] == {"token": "tok"}


def test_the_kubelets_client_certificate_is_in_system_masters() -> None:
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_pem, cert_pem, _ = rc.kubelet_client_certificate()
    ca, cert = x509.load_pem_x509_certificate(ca_pem), x509.load_pem_x509_certificate(cert_pem)
    assert cert.issuer == ca.subject
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    assert [o.value for o in orgs] == ["system:masters"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in eku


def test_state_survives_its_file(tmp_path: Path) -> None:
    state = rc.State(
        tag="abc",
        node_ip="192.0.2.2",
        ports=PORTS,
        sysctls={"kernel.panic": "1"},
        snapshot={"kernel.panic": "1"},
        netns_before=[],
        cni_cache_before=["x"],
        host_dirs_before=["/run/netns"],
        bridge_existed=False,
        daemons=[rc.Daemon("etcd", 12, 345)],
        timings={"up_total_s": 9.5},
    )
    layout = rc.Layout(tmp_path)
    rc.save_state(layout, state)
    assert rc.load_state(layout) == state
    assert layout.state.stat().st_mode & 0o777 == 0o600  # it names ports and paths only,
    layout.state.write_text("{")  # but a torn file is said, not a traceback
    with pytest.raises(rc.UsageError, match="cannot be read"):
        rc.load_state(layout)


# A mountinfo as this machine's kernel writes it (proc(5)), with a directory whose name
# extends the cluster's (/var/tmp/c2) that must not count as under /var/tmp/c.
MOUNTINFO = """\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
41 22 254:0 /var/tmp/c/run/kubelet /var/tmp/c/run/kubelet rw,relatime shared:5 - ext4 /dev/vda rw
42 41 0:50 / /var/tmp/c/run/kubelet/pods/u/volumes/kubernetes.io~projected/k rw - tmpfs tmpfs rw
43 22 0:51 / /var/tmp/c/run/containerd-state/x/rootfs rw - overlay overlay rw
44 22 0:52 / /var/tmp/c2/other rw - tmpfs tmpfs rw
45 22 0:4 net:[4026532] /run/netns/cni-1234 rw - nsfs nsfs rw
"""


def test_mounts_under_the_cluster_dir_deepest_first(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    table = rc.mounts(info)
    assert rc.Mount(Path("/sys/fs/cgroup/memory"), "cgroup") in table
    assert rc.mounts_under(Path("/var/tmp/c"), table) == [
        Path("/var/tmp/c/run/kubelet/pods/u/volumes/kubernetes.io~projected/k"),
        Path("/var/tmp/c/run/containerd-state/x/rootfs"),
        Path("/var/tmp/c/run/kubelet"),
    ]


def test_sysctl_changes_exclude_volatile_values_and_the_clusters_own_interfaces() -> None:
    before = {
        "kernel.panic": "1",
        "fs.file-nr": "1 0 9",
        "net.ipv4.conf.eth0.forwarding": "0",
        f"net.ipv4.conf.{rc.BRIDGE}.forwarding": "1",
    }
    after = {
        "kernel.panic": "10",
        "fs.file-nr": "5 0 9",
        "net.ipv4.conf.eth0.forwarding": "1",
    }
    assert rc.changed_sysctls(before, after) == {
        "kernel.panic": ("1", "10"),
        "net.ipv4.conf.eth0.forwarding": ("0", "1"),
    }


def test_sysctls_are_set_back_and_a_failure_is_said(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "panic").write_text("10\n")
    (tmp_path / "vm").mkdir()
    (tmp_path / "vm" / "overcommit_memory").write_text("0\n")
    failed = rc.restore_sysctls(
        {"kernel.panic": "1", "vm.overcommit_memory": "0", "kernel.missing": "3"}, tmp_path
    )
    assert (tmp_path / "kernel" / "panic").read_text() == "1\n"
    assert len(failed) == 1 and failed[0].startswith("kernel.missing")


def test_only_host_directories_the_cluster_made_and_left_empty_are_removed(tmp_path: Path) -> None:
    made, holds, was_there = tmp_path / "a" / "made", tmp_path / "holds", tmp_path / "was"
    for d in (made, holds, was_there):
        d.mkdir(parents=True)
    (holds / "socket").touch()
    rc.remove_made_dirs([str(was_there)], [made, made.parent, holds, was_there])
    assert not made.exists() and not made.parent.exists()  # deepest first, then its parent
    assert holds.is_dir() and was_there.is_dir()


def test_the_kubelets_sysctls_are_all_restored() -> None:
    """setupKernelTunables (v1.32.0-rc.1 pkg/kubelet/cm/container_manager_linux.go:406-411)
    sets these six; the bridge plugin turns on forwarding for its gateway."""
    assert set(rc.RESTORED_SYSCTLS) == {
        "vm.overcommit_memory",
        "vm.panic_on_oom",
        "kernel.panic",
        "kernel.panic_on_oops",
        "kernel.keys.root_maxkeys",
        "kernel.keys.root_maxbytes",
        "net.ipv4.ip_forward",
    }


def test_a_daemon_is_found_by_its_tag_and_stopped(tmp_path: Path) -> None:
    """What teardown relies on: every process started carries the tag, also one its
    daemon forks (as containerd forks its shims), and SIGTERM then SIGKILL ends them."""
    layout = rc.Layout(tmp_path)
    layout.logs.mkdir()
    tag = "test-" + str(time.monotonic_ns())
    # the child ignores SIGTERM: only the SIGKILL after the grace ends it
    script = "trap '' TERM; sleep 300 & trap '' TERM; wait"
    daemon = rc.spawn("sleeper", ["bash", "-c", script], layout, tag)
    state = rc.State(
        tag=tag,
        node_ip="192.0.2.2",
        ports=PORTS,
        sysctls={},
        snapshot={},
        netns_before=[],
        cni_cache_before=[],
        bridge_existed=False,
        daemons=[daemon],
    )
    try:
        rc.wait_until("the fork", lambda: len(rc.tagged(tag)) >= 2, 10)
        assert daemon.pid in rc.tagged(tag) and rc.alive(daemon)
        assert rc.stop_daemons(state, ["sleeper"], grace=0.5) == []
        assert not rc.alive(daemon)
        assert rc.stop_tagged(tag, grace=0.5) == []  # its child, left behind, goes too
        assert rc.tagged(tag) == []
    finally:
        rc.stop_tagged(tag)
    assert rc.how_it_ended(layout, "sleeper") == "was killed by signal 9"


def test_up_refuses_missing_binaries_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = rc.main(
        ["up", "--kube", str(tmp_path), "--dir", str(tmp_path / "c"), "--bin", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "not built:" in err and "build --kube TREE" in err
    assert not (tmp_path / "c" / "state.json").exists()  # nothing started, nothing to undo


def test_down_without_a_cluster_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rc.main(["down", "--dir", str(tmp_path)]) == 0
    assert rc.main(["status", "--dir", str(tmp_path)]) == 1
    assert "no cluster in" in capsys.readouterr().out
