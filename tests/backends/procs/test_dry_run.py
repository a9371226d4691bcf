"""`plan` prints the very commands an evaluation runs (bisector.backends.procs.dry_run),
on a 2017-shaped tree (no go.mod: GOPATH mode, GO111MODULE=off, the insecure port) and a
1.32-shaped one (go.mod and vendor/modules.txt, as kubernetes v1.32.0-rc.1 has them:
module mode with `-mod=vendor` and GOPROXY=off, TLS, `--advertise-address`, the
components), run for real over the fake Kubernetes programs (tests/helpers/fake_kube.py).

Every command the evaluation ran through the one process door, from its build to its
teardown, is a line of the plan, in order, and the plan has no other command. What only a
launch can know (the cluster's tag, temporary root and ports, the build cache's entry) is
taken from the launch; the plan's placeholders for them are checked to differ in nothing
else. `go version`, asked once a run per Go (here at the setup, for the harness), is named
by the plan in a comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import Candidate
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import dry_run
from bisector.backends.procs.backend import ProcsBackend
from bisector.backends.procs.builds import Built
from bisector.backends.procs.options import ProcsSettings
from bisector.backends.steps import step
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.provenance import WindowRule
from tests.helpers.procs_backend import ProcsWorld, built_of, cluster_of

BOTH = ["kube-controller-manager", "kube-scheduler"]


def _shape_1_32(tree: Path) -> None:
    """The files of kubernetes v1.32.0-rc.1 the backend reads: go.mod's go line (go 1.23.0),
    vendor/modules.txt, and the apiserver's --advertise-address flag
    (staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go)."""
    files = {
        "go.mod": "module k8s.io/kubernetes\n\ngo 1.23.0\n",
        "vendor/modules.txt": "# github.com/x/y v1.0.0\n",
        "staging/src/k8s.io/apiserver/pkg/server/options/server_run_options.go": (
            'fs.IPVar(&s.AdvertiseAddress, "advertise-address", s.AdvertiseAddress, "...")\n'
        ),
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)


def _record_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command run through `proc.run` from now on, rendered as a plan renders it."""
    ran: list[str] = []
    real = proc.run

    def run(
        cmd: Sequence[str],
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        **kwargs: object,
    ) -> proc.CmdResult:
        ran.append(step(*cmd, cwd=cwd, env=env).render())
        return real(cmd, cwd=cwd, env=env, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run", run)
    return ran


def _from_the_launch(
    monkeypatch: pytest.MonkeyPatch, layout: pc.Layout, built: Built, cache: Path
) -> None:
    """The plan's layout and binaries are the launch's, once checked to differ from its
    placeholders only where a launch chooses (tag, root, ports; the cache entry)."""
    planned_layout, planned_built = dry_run.planned_layout, dry_run.planned_built

    def launched_layout(cfg: ProcsSettings, candidate: Candidate) -> pc.Layout:
        planned = planned_layout(cfg, candidate)
        assert (planned.files, planned.secure) == (layout.files, layout.secure)
        assert planned.root.parent == layout.root.parent
        return layout

    def launched_built(cfg: ProcsSettings, candidate: Candidate) -> Built:
        planned = planned_built(cfg, candidate)

        def shape(b: Built) -> list[tuple[str, tuple[str, ...]]]:
            named = [("kube-apiserver", b.binary), *b.components]
            return [(n, p.relative_to(cache).parts[1:]) for n, p in named]

        assert planned.stamped == built.stamped and shape(planned) == shape(built)
        return built

    monkeypatch.setattr(dry_run, "planned_layout", launched_layout)
    monkeypatch.setattr(dry_run, "planned_built", launched_built)


def _plan_and_run(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch, backend: ProcsBackend, candidate: Candidate
) -> tuple[list[str], list[str]]:
    """(the plan's commands, the commands the evaluation ran)."""
    backend.setup()
    ran = _record_commands(monkeypatch)
    seen: list[pc.Layout] = []
    real_launch = backend.launch

    def launch(c: Candidate) -> None:
        real_launch(c)
        seen.append(cluster_of(backend, c.slot).layout)

    backend.launch = launch  # type: ignore[method-assign,assignment]
    settings = EvaluationSettings("conflicts", window=WindowRule(real_time=True), launch_attempts=1)
    m = evaluate_candidate(backend, candidate, settings)
    assert m.reason is None and m.value == 9, m
    assert world.leftovers() == []
    executed = list(ran)
    _from_the_launch(
        monkeypatch, seen[0], built_of(backend, candidate.commit), backend.cfg.build_cache_dir
    )
    planned = [line for line in backend.plan(candidate) if not line.startswith("#")]
    return planned, executed


def test_the_plan_is_what_an_evaluation_of_a_2017_tree_runs(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = world.backend()
    candidate = world.candidate(2)
    planned, executed = _plan_and_run(world, monkeypatch, backend, candidate)
    assert planned == executed
    build = next(line for line in executed if "./cmd/kube-apiserver" in line)
    assert "GO111MODULE=off" in build and "src/k8s.io/kubernetes" in build
    assert any("--insecure-port=" in line for line in executed)


def test_the_plan_is_what_an_evaluation_of_a_1_32_tree_runs(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.23.9")  # what go.mod's `go 1.23.0` needs
    backend = world.backend(go_modules=str(world.kube.go), components=BOTH)
    candidate = world.candidate(2)
    _shape_1_32(candidate.worktree)
    planned, executed = _plan_and_run(world, monkeypatch, backend, candidate)
    assert planned == executed
    build = next(line for line in executed if "./cmd/kube-apiserver" in line)
    # What the hand-written build line left out: hack/lib/golang.sh builds with vendor/.
    assert "GO111MODULE=on" in build and "-mod=vendor" in build and "GOPROXY=off" in build
    assert any("--secure-port=" in line for line in executed)
    assert any("--advertise-address=192.0.2.1" in line for line in executed)
    assert sum("./cmd/kube-scheduler" in line for line in executed) == 1


def test_the_plan_shows_ports_by_their_role_not_numbers_a_run_does_not_use(
    world: ProcsWorld,
) -> None:
    # A launch picks free loopback ports (pc.Ports.pick); the plan printed etcd's 2379, the
    # apiserver's 8080 and kubelets from 10250, which no run used.
    backend = world.backend()
    text = "\n".join(backend.plan(Candidate("c" * 40, world.root, world.run_dir / "e")))
    assert "http://127.0.0.1:<etcd-client-port>" in text
    assert "--insecure-port=<apiserver-port>" in text
    assert "--kubelet-port=<hollow-node-2-port>" in text
    assert "--kubelet-read-only-port=<hollow-node-2-read-only-port>" in text
    assert not re.search(r"127\.0\.0\.1:\d|-port=[1-9]", text), text
    ports = pc.Ports.placeholder(3)
    assert len({ports.etcd_client, ports.apiserver, *ports.kubelets[2]}) == 4  # distinct
