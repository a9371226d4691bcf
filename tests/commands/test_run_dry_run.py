"""`bisector run --dry-run` with each shipped config: the real commands, in order, none run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.sim import SECONDS_PER_NODE_SECOND
from bisector.durations import format_duration
from bisector.entry import main
from tests.helpers.repo import PR, BuiltRepo, build_repo

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

# For each shipped config: the backend's key commands, in the order a bisection runs them.
EXPECTED: dict[str, list[str]] = {
    "default.toml": [
        "build: read the simulator profile",
        "hack/kubemark-sim.toml",
        "simulate 5000 hollow nodes for 5m00s",
        "collect: write",
    ],
    "local-example.toml": [
        "make quick-release",
        "./hack/local-up.sh",
        "sleep 300",
        'cp /var/log/kube-apiserver.log "$BISECTOR_LOG"',
        "./hack/local-down.sh",
    ],
    "gce-kubemark-5000.toml": [
        "git apply --check",
        "&& make quick-release",
        "NUM_NODES=80 NODE_SIZE=n1-highmem-8 MASTER_SIZE=n1-standard-4",
        "./cluster/kube-up.sh",
        "KUBEMARK_NUM_NODES=5000 KUBEMARK_MASTER_SIZE=n1-standard-64",
        "API_SERVER_TEST_LOG_LEVEL=--v=3",
        "./test/kubemark/start-kubemark.sh",
        "# warmup: wait 30m00s",
        "gcloud compute scp --project my-gcp-project --zone us-central1-b "
        "'kubemark-5000-kubemark-master:/var/log/kube-apiserver.log*'",
        "./test/kubemark/stop-kubemark.sh",
        "./cluster/kube-down.sh",
    ],
    "gce-kubemark-500.toml": [
        "&& make quick-release",
        "NUM_NODES=6 NODE_SIZE=n1-standard-8",
        "./cluster/kube-up.sh",
        "KUBEMARK_NUM_NODES=500 KUBEMARK_MASTER_SIZE=n1-standard-16",
        "API_SERVER_TEST_LOG_LEVEL=--v=3",
        "./test/kubemark/start-kubemark.sh",
        "# warmup: wait 20m00s",
        "'kubemark-500-kubemark-master:/var/log/kube-apiserver.log*'",
        "./test/kubemark/stop-kubemark.sh",
        "./cluster/kube-down.sh",
    ],
    "kind-kubemark.toml": [
        "git describe --tags",
        "kind build node-image",
        "build/run.sh make all WHAT=cmd/kubemark",
        "kind create cluster --name bisector",
        "kind load docker-image",
        "create secret generic kubeconfig --namespace kubemark",
        "apply -f",
        "# warmup: wait 10m00s",
        "logs --namespace kube-system kube-apiserver-bisector-control-plane",
        "kind delete cluster --name bisector",
    ],
}
# Wall time printed: expected evaluations (9 for every config here) x the config's `estimate`.
ESTIMATE = {  # 10 evaluations: 9 of the search and its confirmation, 1 revert check
    "default.toml": "estimated wall time: 2m30s",  # 10 x 15s
    "local-example.toml": "estimated wall time: 5h50m",  # 10 x 35m
    "gce-kubemark-5000.toml": "estimated wall time: 15h00m",  # 10 x 1h30m
    "gce-kubemark-500.toml": "estimated wall time: 11h40m",  # 10 x 1h10m
    "kind-kubemark.toml": "estimated wall time: 8h20m",  # 10 x 50m
}


def _no_subprocess(*args: object, **kwargs: object) -> proc.CmdResult:
    raise AssertionError(f"--dry-run ran a command: {args}")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltRepo:
    # 16 mainline commits, two of them PR merges: 16 commits in all and 14 first-parent.
    values = [2] * 8 + [40] * 8
    prs = [PR(at=5, values=[2, 2], number=101), PR(at=9, values=[2, 40], number=102)]
    return build_repo(tmp_path_factory.mktemp("dry") / "repo", values, prs=prs)


def _in_order(lines: list[str], needles: list[str]) -> None:
    """Each needle appears on some line, each at or after the previous needle's line."""
    at = 0
    for needle in needles:
        found = next((i for i in range(at, len(lines)) if needle in lines[i]), None)
        assert found is not None, f"{needle!r} not found at or after line {at}:\n" + "\n".join(
            lines
        )
        at = found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dry_run_prints_the_real_commands_and_runs_none(
    name: str,
    built: BuiltRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(proc, "run", _no_subprocess)
    run_dir = tmp_path / "run"
    good, bad = built.mainline[0], built.mainline[-1]
    argv = ["run", "--dry-run", "--config", str(CONFIGS / name), "--repo", str(built.path)]
    argv += ["--good", good, "--bad", bad, "--run-dir", str(run_dir)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    lines = out.splitlines()
    if name.startswith("gce-"):  # the gce configs walk the PR merges (first_parent = true)
        # 15 merges/commits after good; 2 + ceil(log2 15) + 1 descent step (19/15 commits
        # per merge) + 2 + 1 revert check
        size, evaluations = 15, 10
    else:  # 19 commits after good, PR branches included; 2 + ceil(log2 19) + 2 + 1 revert
        size, evaluations = 19, 10
    assert lines[0] == f"range: {good[:12]}..{bad[:12]}, {size} commits"
    assert lines[1].startswith(f"expected evaluations: {evaluations} ")
    assert lines[1].endswith("confirm, revert check)")  # [run] revert_check is on by default
    # The revert check is planned and said, with the hunt for further culprits.
    assert lines[2].startswith("revert check: the bad endpoint with the culprit reverted")
    assert lines[3].startswith(ESTIMATE[name])
    _in_order(lines, EXPECTED[name])
    # The commands are the first evaluation's: the good endpoint, in the run's slot-0 worktree.
    assert f"good endpoint {good[:12]}" in out
    if name != "local-example.toml":  # the local backend's commands are the user's own
        assert str(run_dir / "evals" / f"001-{good[:12]}") in out
    assert not run_dir.exists()  # a plan creates nothing


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    return out


@pytest.mark.parametrize(
    ("table", "nodes", "simulated_s"),
    [
        ("", 5000, 300.0),  # no --config: the sim backend's defaults (5m, 5000 nodes)
        ('[run]\nbackend = "sim"\nwarmup = "1m"\n', 5000, 60.0),
        ('[run]\nwarmup = "2m"\n[backends.sim]\nnodes = 1000\nduration = "30s"\n', 1000, 30.0),
    ],
)
def test_a_sim_dry_run_estimates_its_time_from_the_cluster_it_simulates(
    *,
    built: BuiltRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    table: str,
    nodes: int,
    simulated_s: float,
) -> None:
    """The README's dry run said "estimated wall time: unknown" though it promised the
    time: the sim knows what it simulates (its nodes for its duration)."""
    monkeypatch.setattr(proc, "run", _no_subprocess)
    argv = ["run", "--dry-run", "--repo", str(built.path), "--first-parent"]
    argv += ["--good", built.mainline[0], "--bad", built.mainline[-1]]
    if table:
        config = tmp_path / "c.toml"
        config.write_text(table)
        argv += ["--config", str(config)]
    out = _plan(argv, capsys)
    assert "expected evaluations: 10 " in out
    each = nodes * simulated_s * SECONDS_PER_NODE_SECOND
    assert f"estimated wall time: {format_duration(10 * each)}\n" in out
    assert f"\nphases: warmup {format_duration(each)}\n" in out  # no "build 0.00s" and such


def test_without_estimate_the_wall_time_says_how_to_get_one(
    built: BuiltRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A backend that cannot reckon its own time (your own commands) says how to give one."""
    monkeypatch.setattr(proc, "run", _no_subprocess)
    config = tmp_path / "c.toml"
    config.write_text(
        '[run]\nbackend = "local"\nwarmup = "1m"\n\n'
        '[backends.local]\nlaunch = "true"\ncollect = "true"\n'
    )
    argv = ["run", "--dry-run", "--config", str(config), "--repo", str(built.path)]
    argv += ["--good", built.mainline[0], "--bad", built.mainline[-1], "--first-parent"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "15 commits" in out and "expected evaluations: 10 " in out
    assert "estimated wall time: unknown; set [run] estimate" in out
