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
from bisector.exitcodes import NightlyExit
from bisector.nightly import run_nightly
from bisector.sim.demo_repo import create_demo_repo
from tests.helpers.ci_history import write_job_history
from tests.helpers.fake_proc import Call, FakeProc
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
