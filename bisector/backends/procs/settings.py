"""The `procs` backend's settings (`[backends.procs]`), read once and checked.

Three groups: the build (the Go toolchains, the caches, the build fixes an old tree
needs with today's toolchain), the harness (the hollow-node binary, built once from a
pinned commit with the project's patch, and the watch load), and the cluster (how many
hollow nodes, how often they report, how many extra node watches, apiserver flags).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bisector.backends import instrument
from bisector.config import Section
from bisector.errors import ConfigError

KEYS = (
    "go",
    "go_modules",
    "gocache",
    "build_cache_dir",
    "build_fixes",
    "build_timeout",
    "prefetch_nice",
    "harness_commit",
    "harness_patch",
    "hollow_nodes",
    "node_status_period",
    "watchers",
    "watch_open_rate",
    "serving",
    "verbosity",
    "apiserver_args",
    "etcd",
    "tmpdir",
    "ready_timeout",
    "stop_grace",
    "git_timeout",
)
FIX_KEYS = ("name", "why", "command", "patch", "since", "until")
SERVING = ("auto", "insecure", "secure")
DATA = Path(__file__).resolve().parents[2] / "data" / "procs"
# The 2017 endpoint the harness is built from by default (kubernetes 7043372, 31 May 2017):
# any commit of the range would do, the harness only has to stay the same for all candidates.
DEFAULT_HARNESS_COMMIT = "7043372d05510b13a0928af92deda6110740dd5e"
DEFAULT_HARNESS_PATCH = "builtin:hollow-node-1.7"
# Debian's golang-1.19-go builds the 2017 trees in GOPATH mode.
DEFAULT_GO = "/usr/lib/go-1.19/bin/go"
_COMMIT = re.compile(r"^[0-9a-fA-F]{4,40}$")


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bisector" / "procs"


def default_tmpdir() -> Path:
    """tmpfs when there is one: etcd's data and the hollow nodes' sockets live there."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path("/tmp")


@dataclass(frozen=True)
class BuildFix:
    """A change an old tree needs to build with today's toolchain, applied in the
    candidate's scratch worktree only, to trees that contain `since` (if set) and do
    not contain `until` (if set: the commit that fixed it upstream)."""

    name: str
    why: str
    command: str | None  # bash, run in the tree (GOPATH layout), with GO, GOPATH, ... set
    patch: Path | None  # or a patch applied with git apply
    since: str | None
    until: str | None

    def describe(self) -> str:
        span = []
        if self.since:
            span.append(f"from {self.since[:12]}")
        if self.until:
            span.append(f"before {self.until[:12]}")
        return self.name + (f" ({', '.join(span)})" if span else "")

    def fingerprint(self) -> str:
        patch = self.patch.read_text(encoding="utf-8") if self.patch else ""
        return "\0".join([self.name, self.command or "", patch, self.since or "", self.until or ""])


@dataclass(frozen=True)
class ProcsSettings:
    go: str
    go_modules: str
    gocache: Path
    build_cache_dir: Path
    build_fixes: tuple[BuildFix, ...]
    build_timeout: float
    prefetch_nice: int
    harness_commit: str
    harness_patch: Path
    hollow_nodes: int
    node_status_period: float
    watchers: int
    watch_open_rate: float
    serving: str
    verbosity: int
    apiserver_args: tuple[str, ...]
    etcd: str
    tmpdir: Path
    ready_timeout: float
    stop_grace: float
    git_timeout: float

    @classmethod
    def from_section(cls, s: Section) -> ProcsSettings:
        s.check_keys(KEYS)
        nodes = s.get_int("hollow_nodes", 100)
        if nodes < 1:
            raise ConfigError(f"{s.where('hollow_nodes')} must be at least 1, got {nodes}")
        watchers = s.get_int("watchers", 0)
        if watchers < 0:
            raise ConfigError(f"{s.where('watchers')} must be 0 or more, got {watchers}")
        period = s.get_duration("node_status_period", "10s")
        if period < 1:
            raise ConfigError(
                f"{s.where('node_status_period')} must be at least 1s (the kubelet's status "
                f"loop), got {period:g}s"
            )
        serving = s.get_str("serving", "auto")
        if serving not in SERVING:
            raise ConfigError(f"{s.where('serving')} must be one of {', '.join(SERVING)}")
        nice = s.get_int("prefetch_nice", 19)
        if not 0 <= nice <= 19:
            raise ConfigError(f"{s.where('prefetch_nice')} must be 0 to 19, got {nice}")
        harness_commit = s.get_str("harness_commit", DEFAULT_HARNESS_COMMIT)
        if not _COMMIT.match(harness_commit):
            raise ConfigError(f"{s.where('harness_commit')}: write a commit hash")
        rate = s.get_float("watch_open_rate", 2000.0)
        if rate <= 0:
            raise ConfigError(f"{s.where('watch_open_rate')} must be above 0 (watches a second)")
        return cls(
            go=s.get_str("go", DEFAULT_GO),
            go_modules=s.get_str("go_modules", "go"),
            gocache=_path(s, "gocache", cache_home() / "go-build"),
            build_cache_dir=_path(s, "build_cache_dir", cache_home() / "builds"),
            build_fixes=_fixes(s),
            build_timeout=s.get_duration("build_timeout", "1h"),
            prefetch_nice=nice,
            harness_commit=harness_commit,
            harness_patch=resolve_patch(
                s.get_str("harness_patch", DEFAULT_HARNESS_PATCH), s.where("harness_patch")
            ),
            hollow_nodes=nodes,
            node_status_period=period,
            watchers=watchers,
            watch_open_rate=rate,
            serving=serving,
            verbosity=s.get_int("verbosity", 3),
            apiserver_args=tuple(s.get_str_list("apiserver_args", [])),
            etcd=s.get_str("etcd", "etcd"),
            tmpdir=_path(s, "tmpdir", default_tmpdir()),
            ready_timeout=s.get_duration("ready_timeout", "5m"),
            stop_grace=s.get_duration("stop_grace", "10s"),
            git_timeout=s.get_duration("git_timeout", "2m"),
        )


def _path(s: Section, key: str, default: Path) -> Path:
    value = s.opt_str(key)
    return Path(value).expanduser().absolute() if value else default


def resolve_patch(value: str, where: str) -> Path:
    """`builtin:<name>` (bisector/data/procs/<name>.patch) or a path to a patch file."""
    return instrument.resolve_patch(value, where, builtins=DATA)


def _fixes(s: Section) -> tuple[BuildFix, ...]:
    raw = s.data.get("build_fixes", [])
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ConfigError(
            f"{s.where('build_fixes')}: expected [[{s.path}.build_fixes]] tables "
            "(name, command or patch, since, until)"
        )
    fixes = []
    for i, item in enumerate(raw):
        fix = Section(item, s.file, f"{s.path}.build_fixes[{i}]")
        fix.check_keys(FIX_KEYS)
        command, patch = fix.opt_str("command"), fix.opt_str("patch")
        if (command is None) == (patch is None):
            raise ConfigError(f"{fix.where('command')}: give a build fix one `command` or `patch`")
        since, until = fix.opt_str("since"), fix.opt_str("until")
        for key, value in (("since", since), ("until", until)):
            if value is not None and not _COMMIT.match(value):
                raise ConfigError(f"{fix.where(key)}: write a commit hash, got {value!r}")
        fixes.append(
            BuildFix(
                name=fix.get_str("name"),
                why=fix.get_str("why", ""),
                command=command,
                patch=resolve_patch(patch, fix.where("patch")) if patch else None,
                since=since,
                until=until,
            )
        )
    names = [f.name for f in fixes]
    if len(set(names)) != len(names):
        raise ConfigError(f"{s.where('build_fixes')}: two build fixes share a name")
    return tuple(fixes)
