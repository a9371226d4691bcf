"""Building kube-apiserver (and the harness's kubemark) from a tree, with the Go it needs.

The toolchain comes from the tree itself: a tree with `go.mod` builds in module mode with
`go_modules` (at least the `go` line of go.mod, the exact `.go-version` noted); a tree
without it is a GOPATH-era tree (Kubernetes <= 1.14), built with `go` (Debian's
golang-1.19 by default) and GO111MODULE=off, inside a GOPATH whose
`src/k8s.io/kubernetes` is a symlink to the worktree (Go takes the import path from
$PWD, which is set to the link). Its minimum is what `hack/lib/golang.sh` checks.

Every build runs with `-trimpath` and one persistent GOCACHE: without the directory in
the compiler's cache keys, a tree one commit away from the last one, in any worktree,
recompiles only the packages that differ. The binary is stored by tree id (plus the
fixes applied and the Go version) in the build cache; a later build of the same tree
takes it from there. The version is stamped with -X (gitCommit = the candidate), so the
launch can check that the apiserver answering is the candidate's own build.

Build fixes (`[[backends.procs.build_fixes]]`) run in the candidate's worktree before
the build, only for trees in their range (`since`/`until` by ancestry); the list applied
is written to `<eval>/build-fixes.json` for the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.options import AUTO, BuildFix, ProcsSettings
from bisector.backends.resources import BuildCache
from bisector.backends.steps import Step, run_step, step, tail
from bisector.errors import BuildError

IMPORT_PATH = "k8s.io/kubernetes"
OUTPUT_DIR = "_output/bisector"
# Bump when the recipe changes what a cached binary is.
RECIPE = "procs-build-1"
_GO_MOD_LINE = re.compile(r"^go\s+(\d+)\.(\d+)", re.MULTILINE)
_GO_VERSION = re.compile(r"\bgo(\d+)\.(\d+)(?:\.(\d+))?")
# hack/lib/golang.sh: `minimum_go_version=go1.13.4` (2019 on) or, in 2017,
# `if [[ "${go_version[2]}" < "go1.6" ...`.
_GOLANG_SH_MIN = (
    re.compile(r"minimum_go_version=go(\d+)\.(\d+)"),
    re.compile(r'<\s*"go(\d+)\.(\d+)"'),
)
VERSION_PACKAGES = (
    f"{IMPORT_PATH}/pkg/version",  # <= 1.15
    f"{IMPORT_PATH}/vendor/k8s.io/client-go/pkg/version",  # GOPATH-era vendored copy
    "k8s.io/component-base/version",  # 1.16+
    "k8s.io/client-go/pkg/version",
)


@dataclass(frozen=True)
class GoNeeds:
    """What a tree asks of the Go toolchain."""

    modules: bool  # go.mod at the root: module mode; else GOPATH mode
    minimum: tuple[int, int] | None
    exact: str | None  # `.go-version`, when the tree pins one
    wanted: tc.GoWanted | None = None  # module mode: go.mod's toolchain/go line
    vendored: bool = False  # vendor/modules.txt: build with -mod=vendor, offline

    def describe(self) -> str:
        mode = "module mode" if self.modules else "GOPATH mode (GO111MODULE=off)"
        need = f", Go >= {self.minimum[0]}.{self.minimum[1]}" if self.minimum else ""
        pinned = f" (the tree pins {self.exact})" if self.exact else ""
        return mode + need + pinned


def go_needs(tree: Path) -> GoNeeds:
    go_mod = tree / "go.mod"
    exact_file = tree / ".go-version"
    exact = exact_file.read_text(encoding="utf-8").strip() if exact_file.is_file() else None
    if go_mod.is_file():
        text = go_mod.read_text(encoding="utf-8", errors="replace")
        match = _GO_MOD_LINE.search(text)
        minimum = (int(match.group(1)), int(match.group(2))) if match else None
        vendored = (tree / "vendor" / "modules.txt").is_file()
        return GoNeeds(True, minimum, exact, tc.go_wanted(text), vendored)
    golang_sh = tree / "hack" / "lib" / "golang.sh"
    minimum = None
    if golang_sh.is_file():
        text = golang_sh.read_text(encoding="utf-8", errors="replace")
        for pattern in _GOLANG_SH_MIN:
            if found := pattern.search(text):
                minimum = (int(found.group(1)), int(found.group(2)))
                break
    return GoNeeds(False, minimum, exact)


def parse_go_version(text: str) -> tuple[int, int] | None:
    """(1, 19) from `go version go1.19.8 linux/amd64`."""
    match = _GO_VERSION.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


_INSTALLING = threading.Lock()


@dataclass(frozen=True)
class Toolchain:
    go: str
    version: str  # `go version` output, part of the cache key
    modules: bool

    @property
    def bin_dir(self) -> str:
        return str(Path(self.go).parent) if "/" in self.go else ""


def version_step(go: str) -> Step:
    return step(go, "version", timeout=60)


def choose_toolchain(cfg: ProcsSettings, needs: GoNeeds, ask: Callable[[str], str]) -> Toolchain:
    """The configured Go for this tree's mode, checked against its minimum; BuildError if
    it is missing or too old. `ask(go)` returns `go version`'s output (cached by the caller)."""
    go = cfg.go_modules if needs.modules else cfg.go
    key = "go_modules" if needs.modules else "go"
    if needs.modules and go == AUTO:
        if needs.wanted is None:
            raise BuildError(
                "go.mod has no `go` line to choose a Go by: set `go_modules` in [backends.procs]"
            )
        with _INSTALLING:  # one install at a time (a build ahead may ask at once)
            go = str(tc.install_go(cfg.tools_dir, needs.wanted))
    try:
        shown = ask(go)
    except proc.CommandError as exc:
        raise BuildError(
            f"the tree needs {needs.describe()}; `{go} version` failed ({tail(exc)}): install "
            f"that Go or set `{key}` in [backends.procs]"
        ) from None
    have = parse_go_version(shown)
    if have is None:
        raise BuildError(f"`{go} version` printed {shown.strip()!r}, not a Go version")
    if needs.minimum is not None and have < needs.minimum:
        raise BuildError(
            f"the tree needs {needs.describe()}; {go} is go{have[0]}.{have[1]}: set `{key}` "
            "in [backends.procs] to a newer Go"
        )
    return Toolchain(go, shown.strip(), needs.modules)


def planned_toolchain(cfg: ProcsSettings, needs: GoNeeds) -> Toolchain:
    """The Go `choose_toolchain` would pick for a tree of `needs`, found without running or
    installing anything (for the dry run): the configured one; for `auto`, the one
    already installed for go.mod's version, else where it would be installed."""
    go = cfg.go_modules if needs.modules else cfg.go
    if needs.modules and go == AUTO:
        found = tc.installed_go(cfg.tools_dir, needs.wanted) if needs.wanted else None
        wanted = needs.wanted.describe() if needs.wanted else "go from go.mod"
        go = str(found or tc.go_binary(cfg.tools_dir / "go" / f"<{wanted}>"))
    return Toolchain(go, "", needs.modules)


@dataclass(frozen=True)
class BuildPlace:
    """Where one tree is built: the directory Go runs in and the environment it gets."""

    tree: Path  # the worktree
    src: Path  # where Go sees it: GOPATH/src/k8s.io/kubernetes (a link), or the tree itself
    env: dict[str, str]


def build_place(
    cfg: ProcsSettings, tool: Toolchain, worktree: Path, gopath: Path, *, vendored: bool = False
) -> BuildPlace:
    env = {
        "GOCACHE": str(cfg.gocache),
        "GOFLAGS": "-trimpath",
        "GO": tool.go,
        "GOTOOLCHAIN": "local",  # never download another Go behind our back
        "BISECTOR_TOOLS": str(gopath / "bin"),
    }
    if tool.bin_dir:
        env["PATH"] = f"{tool.bin_dir}:{_os_path()}"
    if tool.modules:
        env |= {"GO111MODULE": "on", "PWD": str(worktree), "CGO_ENABLED": "0"}
        if vendored:
            # hack/lib/golang.sh builds with the tree's vendor/ too; no module proxy is
            # asked for anything (offline here, and reproducible anywhere).
            env |= {"GOFLAGS": "-trimpath -mod=vendor", "GOPROXY": "off", "GOSUMDB": "off"}
        return BuildPlace(worktree, worktree, env)
    src = gopath / "src" / IMPORT_PATH
    env |= {"GO111MODULE": "off", "GOPATH": str(gopath), "PWD": str(src)}
    return BuildPlace(worktree, src, env)


def _os_path() -> str:
    return os.environ.get("PATH", "/usr/bin:/bin")


def link_gopath(place: BuildPlace) -> None:
    """GOPATH/src/k8s.io/kubernetes -> the worktree (replacing an older link)."""
    if place.src == place.tree:
        return
    place.src.parent.mkdir(parents=True, exist_ok=True)
    (Path(place.env["BISECTOR_TOOLS"])).mkdir(parents=True, exist_ok=True)
    if place.src.is_symlink() or place.src.exists():
        place.src.unlink()
    place.src.symlink_to(place.tree.absolute(), target_is_directory=True)


def ancestor_step(worktree: Path, commit: str, timeout: float) -> Step:
    """`git merge-base --is-ancestor commit HEAD`: exit 0 when the tree contains `commit`."""
    return step("git", "merge-base", "--is-ancestor", commit, "HEAD", cwd=worktree, timeout=timeout)


def fix_applies(fix: BuildFix, contains: Callable[[str], bool]) -> bool:
    if fix.since is not None and not contains(fix.since):
        return False
    return fix.until is None or not contains(fix.until)


def fix_step(fix: BuildFix, place: BuildPlace, timeout: float) -> Step:
    if fix.patch is not None:
        return step("git", "apply", fix.patch, cwd=place.tree, timeout=timeout)
    assert fix.command is not None
    return step(
        "bash", "-euo", "pipefail", "-c", fix.command, cwd=place.src, env=place.env, timeout=timeout
    )


# No symbol table, no DWARF: what hack/lib/golang.sh links unless DBG=1 (v1.32.0-rc.1,
# kube::golang::build_binaries: `goldflags="${goldflags} -s -w"`). The code is the same;
# the debug information is work nobody reads here: without it (and with the compiler not
# writing it either, `-dwarf=false`) a cold kube-apiserver build of the 2017 tree took
# 0.82x the CPU (Go 1.19: 201 s against 246 s user+sys; docs/procs.md).
STRIP_LDFLAGS = "-s -w"
GCFLAGS = "all=-dwarf=false"


def ldflags(commit: str) -> str:
    values = {"gitCommit": commit, "gitTreeState": "clean"}
    return " ".join(
        [STRIP_LDFLAGS]
        + [
            f"-X {package}.{key}={value}"
            for package in VERSION_PACKAGES
            for key, value in values.items()
        ]
    )


def go_build_step(
    place: BuildPlace, package: str, output: Path, commit: str, timeout: float, *, static: bool
) -> Step:
    """`go build` of ./cmd/<name> into `output`; servers are static, as hack/lib/golang.sh
    builds them (CGO_ENABLED=0)."""
    env = dict(place.env)
    if static:
        env["CGO_ENABLED"] = "0"
    return step(
        place.env["GO"],
        "build",
        "-gcflags",
        GCFLAGS,
        "-ldflags",
        ldflags(commit),
        "-o",
        output,
        f"./{package}",
        cwd=place.src,
        env=env,
        timeout=timeout,
    )


AHEAD_ENV = "BISECTOR_PROCS_BUILD_AHEAD"  # marks the processes of a build made ahead


def ahead_mark(run_dir: Path) -> str:
    """The value of AHEAD_ENV for one run's builds ahead: its run directory's hash, so one
    run's teardown never re-prioritises another run's (or another clone's) builds."""
    return hashlib.sha256(str(run_dir.absolute()).encode()).hexdigest()[:16]


def nice(s: Step, level: int, mark: str) -> Step:
    """The same step at a lower CPU priority (builds ahead, while a cluster is measured),
    its processes marked with this run's `mark` so `reprioritize` finds them."""
    if level <= 0:
        return s
    env = {**s.env, AHEAD_ENV: mark}
    return Step(("nice", "-n", str(level), *s.cmd), s.cwd, env, s.timeout)


def reprioritize(level: int, mark: str) -> int:
    """Set the CPU priority of this run's running build-ahead processes (those marked
    `mark`) to `level`: normal while no cluster is measured, low while one is.
    Raising a priority needs CAP_SYS_NICE; without it a build ahead simply stays low.
    Returns how many processes were changed."""
    mark_bytes = f"{AHEAD_ENV}={mark}".encode()
    changed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark_bytes not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            os.setpriority(os.PRIO_PROCESS, int(entry.name), level)
            changed += 1
        except (OSError, ValueError):
            continue
    return changed


def write_fixes_applied(eval_dir: Path, applied: list[BuildFix]) -> None:
    """`<eval>/build-fixes.json`: the fixes this candidate's tree was built with."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    records = [{"name": f.name, "why": f.why, "range": f.describe()} for f in applied]
    (eval_dir / "build-fixes.json").write_text(json.dumps(records, indent=1) + "\n")


def cached_binary(cache: BuildCache, key: str, name: str) -> Path | None:
    if not cache.has(key):
        return None
    path = cache.entry(key) / OUTPUT_DIR / name
    return path if path.is_file() else None


def stamp_file(binary: Path) -> Path:
    """Beside a built binary: the commit its version was stamped with (-X gitCommit)."""
    return binary.with_name(binary.name + ".commit")


def write_stamp(binary: Path, commit: str) -> None:
    stamp_file(binary).write_text(commit + "\n", encoding="utf-8")


def read_stamp(binary: Path) -> str | None:
    """The commit a (cached) binary reports at /version; None for an entry cached before
    stamps were kept (it is built again: what it reports is not known)."""
    try:
        text = stamp_file(binary).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def run_build_step(s: Step, what: str, commit: str, log: Path | None = None) -> None:
    try:
        run_step(s, log=log)
    except proc.CommandError as exc:
        raise BuildError(f"{what} failed for {commit[:12]} ({exc.why}): {tail(exc)}") from None
