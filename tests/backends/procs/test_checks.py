"""`bisector doctor` for the procs backend (bisector/backends/procs/checks.py): Go, etcd,
ports, open files, cache directories, memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.procs import checks as procs_checks
from bisector.config import Section
from tests.helpers.procs_backend import procs_settings


def test_doctor_checks_go_etcd_ports_files_memory(tmp_path: Path) -> None:
    from tests.helpers import fake_kube

    kube = fake_kube.install(tmp_path / "fake")
    section = Section({"go": str(kube.go), "go_modules": "/nonexistent/go",
                       "etcd": str(tmp_path / "no-etcd"), "watchers": 100, "hollow_nodes": 5},
                      "p.toml", "backends.procs")  # fmt: skip
    findings = {f.what: f for f in procs_checks.check(section, tree=tmp_path)}
    assert findings["[backends.procs] go"].ok and "go1.19" in findings["[backends.procs] go"].detail
    assert findings["[backends.procs] go_modules"].ok  # not needed by a GOPATH-era tree
    assert not findings["[backends.procs] etcd"].ok
    assert "apt-get install etcd-server" in findings["[backends.procs] etcd"].detail
    assert findings["loopback ports"].ok and findings["open files (ulimit -n)"].ok


def test_doctor_counts_the_watch_tables_in_the_open_files_a_run_needs() -> None:
    # Found in the adversarial pass: the open-files check counted `watchers` only, so
    # [[watches]] tables of as many pod watches as the hard limit allows passed doctor and
    # `bisector run`'s preflight; the load generator (one socket per watch, load.py) then
    # could not open them and every launch waited out ready_timeout.
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard > 1 << 20:
        pytest.skip("no finite hard open-files limit to exceed")
    section = Section({"watchers": 0, "hollow_nodes": 1,
                       "watches": [{"resource": "pods", "count": hard}]},
                      "p.toml", "backends.procs")  # fmt: skip
    findings = {f.what: f for f in procs_checks.check(section)}
    files = findings["open files (ulimit -n)"]
    assert not files.ok, files.detail
    assert f"{hard} watches" in files.detail and "[[watches]]" in files.detail


@pytest.mark.parametrize(
    ("key", "value"),
    [("build_cache_dir", "/proc/no-such-dir"), ("tools_dir", "/proc/no-such-dir")],
)  # fmt: skip
def test_doctor_refuses_a_cache_directory_that_cannot_be_made(key: str, value: str) -> None:
    # Found in the adversarial pass: both passed `bisector run`'s checks; the run then
    # failed at setup (the harness build) with a message naming no key.
    section = Section({key: value}, "p.toml", "backends.procs")
    findings = {f.what: f for f in procs_checks.check(section)}
    found = findings[f"[backends.procs] {key}"]
    assert not found.ok and value in found.detail, found.detail


def test_doctor_in_a_module_checkout_wants_the_module_go(tmp_path: Path) -> None:
    (tmp_path / "hack" / "lib").mkdir(parents=True)
    (tmp_path / "hack" / "lib" / "golang.sh").write_text("")
    (tmp_path / "go.mod").write_text("module k8s.io/kubernetes\ngo 1.24\n")
    section = Section({"go_modules": "/nonexistent/go"}, "p.toml", "backends.procs")
    findings = {f.what: f for f in procs_checks.check(section, tree=tmp_path)}
    assert not findings["[backends.procs] go_modules"].ok
    assert "Go >= 1.24" in findings["[backends.procs] go_modules"].detail


def test_doctor_memory_budget_counts_the_hollow_nodes(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 24000000 kB\nMemAvailable: 4194304 kB\n")
    assert procs_checks.memory(procs_settings(hollow_nodes=5), meminfo).ok
    small = procs_checks.memory(procs_settings(hollow_nodes=500), meminfo)
    assert not small.ok and "lower `hollow_nodes`" in small.detail


def test_a_cluster_too_big_for_memory_is_refused_for_memory_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found in the adversarial pass: `hollow_nodes = 20000` was refused for open files
    # (`bisector run` says doctor's first missing finding), the second-best reason: the
    # limit can be raised, the machine's memory cannot. 3 GiB + 20,000 x 90 MiB is ~1.7 TiB,
    # more than any machine this runs on (its real /proc/meminfo); the open-files limit is
    # the pass's `ulimit -n 256`, as doctor reads it.
    import resource

    from tests.helpers import fake_kube

    kube = fake_kube.install(tmp_path / "fake")
    monkeypatch.setattr(resource, "getrlimit", lambda which: (256, 256))
    section = Section({"go": str(kube.go), "etcd": str(kube.etcd), "hollow_nodes": 20000},
                      "p.toml", "backends.procs")  # fmt: skip
    missing = [f for f in procs_checks.check(section, tree=tmp_path) if not f.ok]
    assert [f.what for f in missing][:1] == ["memory"], [(f.what, f.detail) for f in missing]
    detail = missing[0].detail
    assert detail.startswith("`hollow_nodes = 20000` needs ~1760.8 GiB (90 MiB a hollow node"), (
        detail
    )
    assert ", this machine has " in detail and "GiB available: lower `hollow_nodes`" in detail
    assert "open files (ulimit -n)" in [f.what for f in missing]  # said too, after it
