"""`[backends.procs] components`: kube-controller-manager and kube-scheduler built from the
candidate's own tree and run beside its apiserver, with the fakes (tests/helpers/fake_kube.py)
through the one process door. Their flags are v1.32's (NOTES of the hand run, section 5;
each flag's source file is named in bisector/backends/procs/flags.py component_cmd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import flags as pf
from bisector.backends.procs.backend import ProcsBackend
from bisector.backends.procs.options import ProcsSettings
from bisector.collected import read_processes
from bisector.config import Section
from bisector.errors import ConfigError
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.measurement import Measurement
from bisector.measure.provenance import WindowRule
from tests.helpers.procs_backend import ProcsWorld, built_of

BOTH = ["kube-controller-manager", "kube-scheduler"]


def _evaluate(backend: ProcsBackend, candidate: Candidate) -> Measurement:
    return evaluate_candidate(
        backend,
        candidate,
        EvaluationSettings("conflicts", launch_attempts=1, window=WindowRule(real_time=True)),
    )


def test_components_are_built_from_the_candidate_and_run_beside_its_apiserver(
    world: ProcsWorld,
) -> None:
    backend = world.backend(warmup_s=2.0, components=BOTH)
    backend.setup()
    candidate = world.candidate(2)
    m = _evaluate(backend, candidate)
    assert m.reason is None and m.value == 9
    built = built_of(backend, candidate.commit)
    assert [name for name, _ in built.components] == BOTH
    for _, binary in built.components:  # the candidate's build: its commit baked in
        assert f"COMMIT = {candidate.commit!r}" in binary.read_text()
    usage = read_processes(candidate.log_dir)
    assert {"kube-controller-manager", "kube-scheduler"} <= set(usage)
    for name in BOTH:
        log = (candidate.eval_dir / "cluster" / f"{name}.log").read_text()
        assert "serving securely on 127.0.0.1:" in log
    assert world.leftovers() == []


def test_a_component_that_exits_at_start_is_a_launch_skip_naming_it(
    world: ProcsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_COMPONENT_EXIT", "kube-scheduler")
    backend = world.backend(warmup_s=2.0, components=BOTH)
    backend.setup()
    m = _evaluate(backend, world.candidate(2))
    assert m.value is None and m.reason is not None
    assert "kube-scheduler exited while waiting for kube-scheduler /healthz ok" in m.reason
    assert world.leftovers() == []


def test_a_build_without_components_is_not_taken_for_one_with_them(world: ProcsWorld) -> None:
    plain = world.backend()
    plain.setup()
    candidate = world.candidate(2)
    plain.build(candidate)
    assert built_of(plain, candidate.commit).components == ()
    with_both = world.backend(components=BOTH)
    with_both.setup()
    with_both.build(candidate)  # the cached apiserver-only entry is another key
    assert len(built_of(with_both, candidate.commit).components) == 2


def test_the_component_flags_bind_loopback_and_use_the_clusters_credentials(
    tmp_path: Path,
) -> None:
    ports = pc.Ports(1, 2, 3, (), (4, 5))
    layout = pc.Layout("t", tmp_path, pc.ClusterFiles.under(tmp_path / "e"), ports, True)
    kcm = pf.component_cmd("kube-controller-manager", Path("/b/kcm"), layout, 4)
    for flag in ("--bind-address=127.0.0.1", "--secure-port=4", "--leader-elect=false",
                 f"--kubeconfig={layout.files.kubeconfig}",
                 f"--service-account-private-key-file={layout.credentials.sa_key}",
                 f"--root-ca-file={layout.credentials.ca}"):  # fmt: skip
        assert flag in kcm
    scheduler = pf.component_cmd("kube-scheduler", Path("/b/s"), layout, 5)
    assert "--secure-port=5" in scheduler and not any("service-account" in a for a in scheduler)


def test_ports_for_components_are_distinct_from_the_clusters(tmp_path: Path) -> None:
    ports = pc.Ports.pick(3, components=2)
    every = [ports.etcd_client, ports.etcd_peer, ports.apiserver, *ports.components]
    every += [p for pair in ports.kubelets for p in pair]
    assert len(ports.components) == 2 and len(set(every)) == len(every) == 11


@pytest.mark.parametrize("value", [["kube-proxy"], ["kube-scheduler", "kube-scheduler"]])
def test_an_unknown_or_repeated_component_is_one_config_error(value: list[str]) -> None:
    with pytest.raises(ConfigError, match="list each of kube-controller-manager, kube-scheduler"):
        ProcsSettings.from_section(Section({"components": value}, "p.toml", "backends.procs"))
