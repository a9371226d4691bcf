"""What grew between two profiles: Go's `go tool pprof -diff_base`, read into rows.

The profiles and pprof outputs in tests/data/pprof are real (tests/data/pprof/README.md):
written by the Go runtime, printed by go1.19.8 and go1.23.9.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bisector.pprof import amount, diff_profiles, grown, in_files, parse_top

DATA = Path(__file__).parent / "data" / "pprof"
CACHER = "staging/src/k8s.io/apiserver/pkg/storage/cacher.go"  # the tree's path of it
GO = next(
    (g for g in ("/usr/lib/go-1.19/bin/go", shutil.which("go")) if g and Path(g).is_file()), None
)


@pytest.mark.parametrize("version", ["go1.19.8", "go1.23.9"])
def test_both_gos_top_output_reads_the_same_and_marks_the_culprits_file(version: str) -> None:
    rows = parse_top((DATA / f"cpu-diff-{version}.txt").read_text(), [CACHER])
    by_name = {r.function: r for r in rows}
    dispatch = by_name["main.dispatchEvent"]
    assert dispatch.in_culprit and dispatch.file.endswith("/k8s.io/apiserver/pkg/storage/cacher.go")
    assert (dispatch.flat, dispatch.cum) == ("10ms", "6850ms")
    assert dispatch.cum_value == pytest.approx(6.85)
    memmove = by_name["runtime.memmove"]
    assert not memmove.in_culprit and memmove.flat_value == pytest.approx(2.31)
    assert [r.function for r in rows][:3] == [
        "runtime.memmove",
        "runtime.findObject",
        "runtime.mallocgc",
    ]
    # What grew most, then the culprit's own file's functions counting their callees.
    top = grown(rows)
    assert top[0].function == "runtime.memmove"
    assert all(r.flat_value > 0 for r in top if not r.in_culprit)
    assert [r.function for r in top if r.in_culprit][:1] == ["main.main"] or any(
        r.function == "main.dispatchEvent" for r in top
    )


def test_a_file_is_the_culprits_by_its_path_in_the_tree() -> None:
    gopath = "/w/gopath/src/k8s.io/kubernetes"
    # A vendored staging package, as a 2017 GOPATH build names it.
    assert in_files(f"{gopath}/vendor/k8s.io/apiserver/pkg/storage/cacher.go", [CACHER])
    # The tree's own package, in GOPATH or a module checkout.
    assert in_files(f"{gopath}/pkg/kubelet/kubelet.go", ["pkg/kubelet/kubelet.go"])
    assert in_files("/run/worktrees/slot-0/pkg/kubelet/kubelet.go", ["pkg/kubelet/kubelet.go"])
    # A vendored library's pkg/util/x.go is not the tree's pkg/util/x.go.
    assert not in_files(f"{gopath}/vendor/github.com/x/y/pkg/util/x.go", ["pkg/util/x.go"])
    assert not in_files("/usr/lib/go-1.19/src/runtime/malloc.go", [CACHER])


def test_pprof_amounts() -> None:
    assert amount("1.20s") == pytest.approx(1.2)
    assert amount("-70ms") == pytest.approx(-0.07)
    assert amount("314.02MB") == pytest.approx(314.02e6)
    assert amount("512kB") == 512e3 and amount("0") == 0


def _lay_out(source: Path, run: Path) -> None:
    """The recorded profiles where the procs backend writes them, with the Go to diff."""
    assert GO is not None
    for side in ("culprit", "parent"):
        profiles = run / side / "profiles"
        profiles.mkdir(parents=True)
        for kind in ("cpu", "heap"):
            shutil.copy(source / f"{side}-{kind}.pprof", profiles / f"{kind}.pprof")
        (profiles / "go.txt").write_text(GO + "\n")


@pytest.mark.skipif(GO is None, reason="no Go installed (Debian: apt-get install golang-1.19-go)")
def test_the_culprits_profiles_diffed_against_its_parents(tmp_path: Path) -> None:
    _lay_out(DATA, tmp_path)
    diffs = diff_profiles(tmp_path / "culprit", tmp_path / "parent", [CACHER], tmp_path / "out")
    assert [d.kind for d in diffs] == ["cpu", "heap in use", "heap allocated"]
    cpu, _inuse, allocated = diffs
    assert cpu.go == GO and not cpu.error and "-diff_base=" in cpu.command
    assert cpu.rows[0].function == "runtime.memmove"
    assert any(r.function == "main.dispatchEvent" and r.in_culprit for r in cpu.rows)
    assert allocated.rows[0].function == "main.dispatchEvent" and allocated.rows[0].in_culprit
    assert allocated.rows[0].flat_value > 1e10  # 18.87GB more allocated
    assert Path(cpu.text).is_file() and "main.dispatchEvent" in Path(cpu.text).read_text()


def test_no_go_is_said_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for side in ("culprit", "parent"):
        (tmp_path / side).mkdir()
        shutil.copy(DATA / f"{side}-cpu.pprof", tmp_path / side / "cpu.pprof")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    (diff,) = diff_profiles(tmp_path / "culprit", tmp_path / "parent", [], tmp_path / "out")
    assert diff.rows == [] and "no Go to diff the profiles with" in diff.error


# The real 2017 apiserver's profiles (tests/data/pprof/README.md): f93a270 against 48d0249.
KUBE = DATA / "kube-apiserver-2017"
F93A270_FILES = [  # `git diff-tree -r --name-only 48d0249 f93a270`
    "staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go",
    "staging/src/k8s.io/apiserver/pkg/storage/selection_predicate.go",
]
STORAGE = "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg/storage"


def test_the_real_2017_diff_shows_the_cachers_watchers_and_the_culprits_file() -> None:
    cpu = grown(parse_top((KUBE / "cpu-diff-go1.19.8.txt").read_text(), F93A270_FILES))
    assert cpu[0].function == f"{STORAGE}.(*cacheWatcher).sendWatchCacheEvent"
    assert cpu[0].flat == "0.19s" and not cpu[0].in_culprit  # cacher.go: not its change
    # runtime.findObject shrank (-0.25s): what shrank is never "what grew".
    assert all(r.flat_value > 0 for r in cpu if not r.in_culprit)
    mine = [r for r in cpu if r.in_culprit]
    assert mine[0].function.endswith("registry.(*Store).Update") and mine[0].cum == "0.69s"
    heap = grown(parse_top((KUBE / "heap-inuse-diff-go1.19.8.txt").read_text(), F93A270_FILES))
    # 16,000 watches each given a bigger cacheWatcher (no trigger for their selector).
    assert heap[0].function == f"{STORAGE}.newCacheWatcher" and heap[0].flat == "401709.77kB"
    assert any(
        r.function.endswith("(*SelectionPredicate).RemoveMatchesSingleRequirements")
        and r.in_culprit
        for r in heap
    )


@pytest.mark.skipif(GO is None, reason="no Go installed (Debian: apt-get install golang-1.19-go)")
def test_the_real_2017_profiles_diff_the_same_today(tmp_path: Path) -> None:
    _lay_out(KUBE, tmp_path)
    diffs = diff_profiles(tmp_path / "culprit", tmp_path / "parent", F93A270_FILES, tmp_path)
    cpu, inuse, _allocated = diffs
    recorded = grown(parse_top((KUBE / "cpu-diff-go1.19.8.txt").read_text(), F93A270_FILES))
    assert cpu.rows == recorded
    assert inuse.rows[0].function == f"{STORAGE}.newCacheWatcher"
