"""Building from a tree (bisector/backends/procs/build.py): the Go a tree needs, its
environment, build fixes by ancestry, the version stamp, links, builds ahead."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.procs import build as pb
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.options import BuildFix
from bisector.backends.steps import step
from bisector.errors import BuildError
from tests.helpers.procs_backend import procs_settings


def test_a_2017_tree_builds_in_gopath_mode_with_its_golang_sh_minimum(tmp_path: Path) -> None:
    # kubernetes 7043372, hack/lib/golang.sh: `if [[ "${go_version[2]}" < "go1.6" ...`
    (tmp_path / "hack" / "lib").mkdir(parents=True)
    (tmp_path / "hack" / "lib" / "golang.sh").write_text(
        'if [[ "${go_version[2]}" < "go1.6" && "${go_version[2]}" != "devel" ]]; then\n'
    )
    needs = pb.go_needs(tmp_path)
    assert needs == pb.GoNeeds(modules=False, minimum=(1, 6), exact=None)


def test_a_module_tree_needs_its_go_line_and_notes_go_version(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module k8s.io/kubernetes\n\ngo 1.24.0\n")
    (tmp_path / ".go-version").write_text("1.24.6\n")
    needs = pb.go_needs(tmp_path)
    assert needs == pb.GoNeeds(
        modules=True, minimum=(1, 24), exact="1.24.6", wanted=tc.GoWanted((1, 24, 0))
    )
    assert "module mode" in needs.describe() and "1.24.6" in needs.describe()


def test_a_go_too_old_for_the_tree_is_a_build_skip() -> None:
    cfg = procs_settings(go_modules="/opt/go1.21/bin/go")
    needs = pb.GoNeeds(modules=True, minimum=(1, 24), exact=None)
    with pytest.raises(BuildError, match=r"go1\.21: set `go_modules`"):
        pb.choose_toolchain(cfg, needs, lambda go: "go version go1.21.3 linux/amd64")
    tool = pb.choose_toolchain(cfg, needs, lambda go: "go version go1.25.1 linux/amd64")
    assert tool.modules and tool.go == "/opt/go1.21/bin/go"


def test_a_missing_go_is_a_build_skip_saying_what_to_set() -> None:
    from bisector import proc

    def missing(go: str) -> str:
        raise proc.CommandError([go, "version"], None, "", "No such file", why="could not start")

    with pytest.raises(BuildError, match="set `go` in"):
        pb.choose_toolchain(procs_settings(), pb.GoNeeds(False, None, None), missing)


def test_gopath_and_module_builds_get_their_environment(tmp_path: Path) -> None:
    cfg = procs_settings(gocache=str(tmp_path / "cache"))
    gopath = pb.build_place(cfg, pb.Toolchain("/usr/lib/go-1.19/bin/go", "go1.19", False),
                            tmp_path / "wt", tmp_path / "gp")  # fmt: skip
    assert gopath.src == tmp_path / "gp" / "src" / "k8s.io" / "kubernetes"
    assert gopath.env["GO111MODULE"] == "off" and gopath.env["PWD"] == str(gopath.src)
    assert gopath.env["GOFLAGS"] == "-trimpath" and gopath.env["GOCACHE"] == str(tmp_path / "cache")
    assert gopath.env["PATH"].startswith("/usr/lib/go-1.19/bin:")
    modules = pb.build_place(cfg, pb.Toolchain("go", "go1.24", True), tmp_path / "wt", tmp_path)
    assert modules.src == tmp_path / "wt" and modules.env["GO111MODULE"] == "on"
    assert modules.env["GOTOOLCHAIN"] == "local"


def test_the_gopath_link_points_at_the_worktree_and_follows_it(tmp_path: Path) -> None:
    cfg = procs_settings()
    tool = pb.Toolchain("go", "go1.19", False)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        place = pb.build_place(cfg, tool, tmp_path / name, tmp_path / "gp")
        pb.link_gopath(place)
        assert place.src.resolve() == (tmp_path / name).resolve()


def test_fixes_apply_by_ancestry() -> None:
    fix = BuildFix("f", "", "true", None, since="aaaa", until="bbbb")
    inside = {"aaaa"}
    assert pb.fix_applies(fix, inside.__contains__)
    assert not pb.fix_applies(fix, {"aaaa", "bbbb"}.__contains__)  # fixed upstream
    assert not pb.fix_applies(fix, set().__contains__)  # before the breakage


def test_the_version_is_stamped_in_every_generation_of_the_version_package() -> None:
    flags = pb.ldflags("7043372d05510b13a0928af92deda6110740dd5e")
    assert "-X k8s.io/kubernetes/pkg/version.gitCommit=7043372d0551" in flags
    assert "-X k8s.io/component-base/version.gitCommit=7043372d0551" in flags


def test_builds_are_linked_without_symbols_and_dwarf_as_kubernetes_links_them(
    tmp_path: Path,
) -> None:
    """hack/lib/golang.sh (v1.32.0-rc.1, kube::golang::build_binaries) links with `-s -w`
    unless DBG=1; the compiler is told not to write the DWARF the linker drops."""
    place = pb.BuildPlace(tmp_path, tmp_path, {"GO": "go"})
    cmd = pb.go_build_step(place, "cmd/kube-apiserver", tmp_path / "out", "c" * 40, 60,
                           static=True).cmd  # fmt: skip
    assert cmd[cmd.index("-gcflags") + 1] == "all=-dwarf=false"
    linked = cmd[cmd.index("-ldflags") + 1].split()
    assert linked[:2] == ["-s", "-w"]
    assert f"k8s.io/kubernetes/pkg/version.gitCommit={'c' * 40}" in linked  # still stamped


def _runs_marked(pid: int, name: str, mark: str) -> bool:
    proc = Path(f"/proc/{pid}")
    try:
        environ = (proc / "environ").read_bytes().split(b"\0")
        return (proc / "comm").read_text().strip() == name and (
            f"{pb.AHEAD_ENV}={mark}".encode() in environ
        )
    except OSError:
        return False


def test_builds_ahead_step_back_while_a_cluster_runs_and_forward_after() -> None:
    mark = pb.ahead_mark(Path("/some/run"))
    marked = pb.nice(step("sleep", "30"), 10, mark)
    assert marked.cmd[:3] == ("nice", "-n", "10") and marked.env[pb.AHEAD_ENV] == mark
    env = {**os.environ, **marked.env}
    ahead = subprocess.Popen(list(marked.cmd), env=env)
    other = subprocess.Popen(["sleep", "30"])
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the tests may run niced: nice is relative
    try:
        # nice sets its priority, then execs sleep: while the exec is under way the
        # process's environ reads empty (a loaded machine made that window long enough
        # to miss), so wait for sleep itself, its environ whole, before reprioritizing.
        deadline = time.monotonic() + 10
        while not _runs_marked(ahead.pid, "sleep", mark) or (
            os.getpriority(os.PRIO_PROCESS, ahead.pid) != min(19, base + 10)
        ):
            assert time.monotonic() < deadline, "nice did not start sleep"
            time.sleep(0.01)
        assert pb.reprioritize(19, mark) >= 1  # lower: anyone may
        assert os.getpriority(os.PRIO_PROCESS, ahead.pid) == 19
        assert os.getpriority(os.PRIO_PROCESS, other.pid) == base  # unmarked: untouched
        if os.geteuid() == 0:  # raising a priority needs CAP_SYS_NICE
            pb.reprioritize(0, mark)
            assert os.getpriority(os.PRIO_PROCESS, ahead.pid) == 0
    finally:
        for p in (ahead, other):
            p.kill()
            p.wait()


# Go 1.19's GOPATH-mode message for an import of a file the tree generates and does not
# commit, as `go build` printed it for real here (4 directories follow the error line).
GO_MISSING_PACKAGE = """\
cmd/x/main.go:2:8: cannot find package "k8s.io/kubernetes/pkg/generated/openapi" in any of:
\t/tmp/g/src/k8s.io/kubernetes/vendor/k8s.io/kubernetes/pkg/generated/openapi (vendor tree)
\t/usr/lib/go-1.19/src/k8s.io/kubernetes/pkg/generated/openapi (from $GOROOT)
\t/tmp/g/src/k8s.io/kubernetes/pkg/generated/openapi (from $GOPATH)
"""


def test_a_build_failure_keeps_the_compilers_error_line_before_the_tail() -> None:
    exc = proc.CommandError(["go", "build"], 1, "", GO_MISSING_PACKAGE)
    said = pb.build_failure(exc)
    assert said.startswith('cmd/x/main.go:2:8: cannot find package "k8s.io/kubernetes/pkg/gen')
    assert said.endswith("pkg/generated/openapi (from $GOPATH)")
    many = GO_MISSING_PACKAGE + "pkg/a/a.go:3:1: undefined: B\n" + "note\n" * 5
    assert "(and 1 more error lines)" in pb.build_failure(
        proc.CommandError(["go", "build"], 1, "", many)
    )
    # A short output whose error line is in its last lines is said once.
    short = proc.CommandError(["go", "build"], 1, "", "a.go:1:1: syntax error\n")
    assert pb.build_failure(short) == "a.go:1:1: syntax error"
