"""`bisector nightly` with a gce job and no `base_checkout` sets the bisection up exactly as
`bisector run` does: the base cluster comes from the good endpoint's tree (issue 11).

Cloud tools are the proc fake: kube-up works, start-kubemark fails for every candidate,
so the night ends "reported, not bisected" (exit 4) with the skips' reasons, never a
config error (exit 2) as it did when nightly built its own backend context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import git
import pytest

from bisector import proc
from bisector.backends.gce import backend as gce
from bisector.errors import ConfigError
from bisector.exitcodes import NightlyExit
from bisector.nightly import run_nightly
from bisector.sim.demo_repo import create_demo_repo
from tests.helpers.ci_history import write_job_history
from tests.helpers.fake_proc import Call, FakeProc
from tests.helpers.gcloud_answers import COMPUTE_DISABLED, NETWORK_CUT
from tests.helpers.nightly import demo_ci_runs


def _gce_nightly(path: Path, *, bucket: str, job: str, repo: Path, state: Path) -> Path:
    path.write_text(
        f"""
[nightly]
state = "{state}"

[[nightly.jobs]]
job = "{job}"
bucket = "{bucket}"
metric = "conflicts"
repo = "{repo}"

[nightly.jobs.run]
backend = "gce"
warmup = "1s"
launch_attempts = 1

[nightly.jobs.backends.gce]
project = "bisector-test"
num_nodes = 1
node_size = "n1-standard-8"
kubemark_num_nodes = 10
build_cache_dir = "{state / "builds"}"
retry_attempts = 1
""",
        encoding="utf-8",
    )
    return path


def _release(call: Call) -> None:
    """What `make quick-release` leaves behind, so the backend finds a build: the files
    of the 2017 release layout the backend looks for (gce.RELEASE_OUTPUTS)."""
    root = Path(call.cwd or ".")
    for output in gce.CACHED_OUTPUTS:
        target = root / output
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("built\n")


@pytest.mark.slow
def test_gce_job_without_base_checkout_uses_the_good_tree_and_reports_skips(
    gcs_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    runs, good, _bad = demo_ci_runs(demo)
    bucket, job = "nightly-gce", "ci-kubernetes-kubemark-gce-scale"
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = _gce_nightly(tmp_path / "n.toml", bucket=bucket, job=job, repo=demo.path, state=state)

    real_run = proc.run
    fake = FakeProc.install(monkeypatch)
    base_heads: list[tuple[str, str]] = []

    def kube_up(call: Call) -> None:
        head = git.Repo(call.cwd).head.commit.hexsha
        base_heads.append((str(call.cwd), head))

    def git_is_real(cmd: Sequence[str], **kwargs: Any) -> proc.CmdResult:
        """git itself is real (its answers are the tree ids); the cloud tools are fake."""
        if cmd[0] == "git":
            return real_run(cmd, **kwargs)
        return fake.run(cmd, **kwargs)

    monkeypatch.setattr(proc, "run", git_is_real)
    fake.on("make quick-release", effect=_release)
    fake.on("kube-up.sh", effect=kube_up)
    fake.on(
        "start-kubemark.sh",
        code=1,
        stderr="ERROR: (gcloud.compute.instances.create) Quota 'CPUS' exceeded.",
    )
    lines: list[str] = []
    code = run_nightly(config, log=lines.append)

    assert code == NightlyExit.REPORTED, "\n".join(lines)
    # The base cluster came up from the good endpoint's own worktree, at the good commit.
    assert len(base_heads) == 1
    cwd, head = base_heads[0]
    assert cwd.endswith("/worktrees/good") and head == good
    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert data["status"] == "failed"
    assert "could not be measured" in data["reason"] and "Quota 'CPUS' exceeded" in data["reason"]
    skipped = data["bisection"]["evaluations"]
    assert skipped and all("Quota 'CPUS' exceeded" in (e["reason"] or "") for e in skipped)
    assert not any("base_checkout" in line for line in lines)
    # kube-down ran at the end: nothing of the base cluster is left up.
    assert fake.find("kube-down.sh")


def _night_of_gcloud(
    gcs_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: str
) -> tuple[Path, Path, FakeProc]:
    """A gce job with a regression to hunt, and every gcloud call exiting 1 with `stderr`."""
    demo = create_demo_repo(tmp_path / "kubernetes", seed=2, prs=12)
    runs, _good, _bad = demo_ci_runs(demo)
    bucket, job = "nightly-gce", "ci-kubernetes-kubemark-gce-scale"
    write_job_history(gcs_client, bucket, job, runs)
    state = tmp_path / "state"
    config = _gce_nightly(tmp_path / "n.toml", bucket=bucket, job=job, repo=demo.path, state=state)
    real_run = proc.run
    fake = FakeProc.install(monkeypatch)

    def git_is_real(cmd: Sequence[str], **kwargs: Any) -> proc.CmdResult:
        if cmd[0] == "git":
            return real_run(cmd, **kwargs)
        return fake.run(cmd, **kwargs)

    monkeypatch.setattr(proc, "run", git_is_real)
    fake.on("gcloud", code=1, stderr=stderr)
    return config, state, fake


@pytest.mark.slow
def test_a_gce_job_whose_project_gives_no_answer_is_reported_tonight_not_a_config_error(
    gcs_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every gcloud call exits 1 (a network cut; an outage looks the same): the night
    exited 2, "cannot run this config", with "enable the API" hints, and would every night
    of the outage. It is an infrastructure failure tonight: reported, not bisected (4),
    with gcloud's cause and no fix, and the hunt is tried again the next night."""
    config, state, fake = _night_of_gcloud(gcs_client, tmp_path, monkeypatch, NETWORK_CUT)
    lines: list[str] = []
    code = run_nightly(config, log=lines.append)

    assert code == NightlyExit.REPORTED, "\n".join(lines)
    data = json.loads(next((state / "reports").glob("*/*/nightly.json")).read_text())
    assert data["status"] == "failed"
    reason = data["reason"]
    assert "project bisector-test could not be read, so nothing was created" in reason
    assert "no answer from Google Cloud" in reason and "Network is unreachable" in reason
    assert "enable" not in reason and "grant" not in reason, reason
    assert any("tried again next night" in line for line in lines)
    assert not fake.find("kube-up.sh") and not fake.find("make quick-release")


@pytest.mark.slow
def test_a_gce_job_whose_project_refuses_the_reads_is_a_config_error_with_the_fix(
    gcs_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _state, fake = _night_of_gcloud(gcs_client, tmp_path, monkeypatch, COMPUTE_DISABLED)
    with pytest.raises(ConfigError) as caught:
        run_nightly(config, log=lambda _line: None)
    message = str(caught.value)
    assert "project bisector-test cannot run this config (nothing was created)" in message
    assert "gcloud services enable compute.googleapis.com --project bisector-test" in message
    assert caught.value.exit_code == NightlyExit.USAGE
    assert not fake.find("kube-up.sh")
