"""The phases a Job's pod says in its log (`bisector-evaluate: <phase>`), told to the
slot's hooks as the pod reaches them: the live line and the ETA follow the evaluation
in the pod, not the Job's start. On the recorded-answers stand-in (tests.helpers.kube_replay):
the `complete` scenario's pod, its log what `bisector evaluate` printed for real here
(tests.helpers.kube_pod), printed line by line while the recorded pod runs."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client as k

from bisector.gitrepo import GitRepo
from bisector.measure.measurement import Measurement
from bisector.sim.demo_repo import DemoRepo, create_demo_repo
from tests.helpers.kube_executor import Hooks, Rig, demo_settings, kubernetes_table, make_rig
from tests.helpers.kube_pod import run_pod
from tests.helpers.kube_replay import FakeCluster, recorded_exception, recording

# The recorded pod runs from 3.2 s to 7.4 s after its Job's create; its log is printed
# over most of that, and the Job is Complete at 8.4 s.
PRINTED_OVER = (3.3, 7.0)
EVERY_PHASE = ["build", "launch", "ready", "warmup", "collect", "teardown"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRepo:
    return create_demo_repo(tmp_path_factory.mktemp("demo") / "repo", nodes=1000, prs=12)


def _rig(
    tmp_path: Path,
    demo: DemoRepo,
    *,
    pod_says: Callable[[str], str] = lambda log: log,
    speed: float = 4.0,
    look_s: float = 0.05,
) -> Rig:
    """A rig whose Jobs replay `complete`, their pod's log `bisector evaluate`'s own
    (through `pod_says`), printed over the recorded pod's run."""
    cluster = FakeCluster(
        ["complete"],
        speed=speed,
        pod_runner=lambda job: pod_says(run_pod(job, tmp_path)),
        log_over=PRINTED_OVER,
    )
    settings = demo_settings(demo, kubernetes_table(demo, cluster.namespace), duration="30s")
    rig = make_rig(tmp_path, cluster, settings)
    rig.executor.phase_look_s = look_s
    return rig


def _evaluate(rig: Rig, demo: DemoRepo, hooks: Hooks) -> Measurement:
    tree = GitRepo(demo.path).tree_of(demo.bad)
    return rig.executor.evaluate(
        rig.backend, rig.candidate(demo.bad), rig.evaluation(demo.bad, tree), hooks
    )


def _outcome(m: Measurement) -> tuple[Any, ...]:
    return (m.value, m.metrics, m.skipped_at, m.reason, m.early_verdict)


@pytest.mark.slow
def test_the_phases_the_pod_says_are_the_slots_in_order(tmp_path: Path, demo: DemoRepo) -> None:
    rig = _rig(tmp_path, demo)
    hooks = Hooks()
    m = _evaluate(rig, demo, hooks)
    assert m.value is not None and m.skipped_at is None
    # The Job's build (a node, the image, the fetch, the setup, then the pod's build) is
    # one; then each phase the pod said, once, in its order; the Job's deletion continues
    # the pod's own teardown.
    assert hooks.phases == EVERY_PHASE
    assert rig.cluster.tail_reads, "the running pod's log was never looked at"


def test_the_log_is_read_every_few_seconds_not_every_poll(tmp_path: Path, demo: DemoRepo) -> None:
    rig = _rig(tmp_path, demo, speed=2.0, look_s=0.5)  # polls every 0.02 s, ~2 s of run
    _evaluate(rig, demo, Hooks())
    times = [when for _pod, when in rig.cluster.tail_reads]
    assert 1 <= len(times) <= 6, times
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(times)), times


@pytest.mark.slow
def test_a_garbled_or_unknown_phase_line_changes_nothing(tmp_path: Path, demo: DemoRepo) -> None:
    clean = _evaluate(_rig(tmp_path / "clean", demo), demo, Hooks())

    def garbled(log: str) -> str:
        noise = "\n".join(
            [
                "bisector-evaluate: warmu",  # cut short
                "bisector-evaluate: compile",  # no phase of the progress
                "bisector-evaluate: Warmup",
                "bisector-evaluate:  teardown",
                "xbisector-evaluate: teardown",
                "bisector-evaluate: teardown now",
                "bisector-evaluate: \x00\ufffdcollect",
                "bisector-evaluate: ",
            ]
        )
        return log.replace("bisector-evaluate: build\n", f"bisector-evaluate: build\n{noise}\n")

    rig = _rig(tmp_path / "garbled", demo, pod_says=garbled)
    hooks = Hooks()
    m = _evaluate(rig, demo, hooks)
    assert "bisector-evaluate: compile" in (Path(m.eval_dir) / "pod.log").read_text()
    assert hooks.phases == EVERY_PHASE
    assert _outcome(m) == _outcome(clean)


@pytest.mark.slow
def test_a_log_read_that_fails_changes_nothing(
    tmp_path: Path, demo: DemoRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = _evaluate(_rig(tmp_path / "clean", demo), demo, Hooks())
    rig = _rig(tmp_path / "failing", demo)
    cluster = rig.cluster
    original = cluster.pod_log
    # A container not started yet (recorded: 400, read as no log), a server error, a
    # connection lost: each look at the tail fails; the read of the record does not.
    waiting = recording("image-never-pull")["logs"]["image-never-pull-bw2sc"]["client"]
    failures: list[BaseException] = [
        recorded_exception(waiting),
        k.ApiException(status=500, reason="Internal Server Error"),
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104)),
    ]

    def failing(pod: str, tail_lines: int | None = None) -> str | None:
        if tail_lines is None:
            return original(pod)
        cluster.tail_reads.append((pod, 0.0))
        raise failures[len(cluster.tail_reads) % len(failures)]

    monkeypatch.setattr(cluster, "pod_log", failing)
    hooks = Hooks()
    m = _evaluate(rig, demo, hooks)
    assert hooks.phases == ["build", "teardown"]
    assert len(cluster.tail_reads) >= 3  # every kind of failure met
    assert _outcome(m) == _outcome(clean)
    assert not hooks.up


def _not_utf8_log_read() -> None:
    """What the client does with a log whose bytes are not UTF-8 (a command's output the
    pod printed as it came): its own deserializer, on the API's text/plain answer."""
    from kubernetes.client import rest

    body = b"bisector-evaluate: build\ncc1: error: \xff\xfe in file\n"
    answer = rest.RESTResponse(
        urllib3.HTTPResponse(
            body=body, headers={"Content-Type": "text/plain"}, status=200, preload_content=True
        )
    )
    answer.read()  # type: ignore[no-untyped-call]
    k.ApiClient().response_deserialize(answer, {"200": "str"})


@pytest.mark.slow
def test_a_log_read_the_client_cannot_decode_changes_nothing(
    tmp_path: Path, demo: DemoRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UnicodeDecodeError):
        _not_utf8_log_read()
    clean = _evaluate(_rig(tmp_path / "clean", demo), demo, Hooks())
    rig = _rig(tmp_path / "bytes", demo)
    cluster = rig.cluster
    original = cluster.pod_log

    def undecodable(pod: str, tail_lines: int | None = None) -> str | None:
        if tail_lines is None:
            return original(pod)
        cluster.tail_reads.append((pod, 0.0))
        _not_utf8_log_read()
        return None

    monkeypatch.setattr(cluster, "pod_log", undecodable)
    hooks = Hooks()
    m = _evaluate(rig, demo, hooks)  # the phase is only shown: the evaluation goes on
    assert cluster.tail_reads
    assert hooks.phases == ["build", "teardown"]
    assert _outcome(m) == _outcome(clean)
    assert not hooks.up


def test_a_record_in_a_log_the_client_cannot_decode_is_a_skip_not_a_crash(
    tmp_path: Path, demo: DemoRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = _rig(tmp_path, demo)

    def undecodable(pod: str, tail_lines: int | None = None) -> str | None:
        _not_utf8_log_read()
        return None

    monkeypatch.setattr(rig.cluster, "pod_log", undecodable)
    hooks = Hooks()
    m = _evaluate(rig, demo, hooks)
    assert m.value is None and m.skipped_at == "executor"
    assert "utf-8" in (m.reason or "")
    assert not hooks.up
