"""`bisector doctor --rehearse` with the REAL 2017 scripts of a kubernetes checkout.

Runs only with `make contract KUBE=/path/to/kubernetes`; skipped otherwise. The
command a Kubernetes engineer runs before a config spends money: it must get the
checkout's kube-up.sh, start-kubemark.sh, stop-kubemark.sh and kube-down.sh through
every stage on the twin, leave nothing in the twin's project, and leave the
checkout exactly as it was (the rehearsal builds and patches a scratch clone).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KUBE = os.environ.get("KUBE")
HOW = "the contract test needs a kubernetes checkout: make contract KUBE=/path/to/kubernetes"

pytestmark = pytest.mark.skipif(not KUBE, reason=HOW)

STAGES = ("setup", "build", "launch", "collect", "teardown", "close")


def _state(checkout: Path) -> tuple[str, str]:
    """HEAD and every changed, untracked or ignored path (a build's _output/ included)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True,
                              check=True).stdout  # fmt: skip

    return git("rev-parse", "HEAD"), git("status", "--porcelain", "--ignored")


def _doctor_rehearse(tmp_path: Path, env_line: str = "") -> tuple[int, str, str]:
    """configs/gce-kubemark-500.toml (a project set, `env_line` added to its env table)
    rehearsed with KUBE; asserts the checkout is left as it was and the scratch removed."""
    assert KUBE is not None
    checkout = Path(KUBE).absolute()
    text = (ROOT / "configs" / "gce-kubemark-500.toml").read_text()
    text = text.replace('project = "my-gcp-project"', 'project = "my-team-scale"')
    text = text.replace("[backends.gce.env]\n", f"[backends.gce.env]\n{env_line}", 1)
    config = tmp_path / "gce-kubemark-500.toml"
    config.write_text(text)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    before = _state(checkout)
    run = subprocess.run(
        [str(Path(sys.executable).parent / "bisector"), "doctor", "--config", str(config),
         "--rehearse", "--repo", str(checkout)],
        env={**os.environ, "TMPDIR": str(scratch_parent)},
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    out = run.stdout + run.stderr
    out_dir = os.environ.get("CONTRACT_OUT")
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        name = "doctor-rehearse-output.txt" if not env_line else "doctor-rehearse-fail-output.txt"
        (Path(out_dir) / name).write_text(out)
    assert "Traceback" not in out and "REAL TOOL?" not in out
    assert _state(checkout) == before
    assert list(scratch_parent.iterdir()) == []  # the scratch clone and twin are removed
    return run.returncode, run.stdout, out


@pytest.mark.timeout(1800)
def test_doctor_rehearse_gets_the_real_scripts_through_and_leaves_the_checkout_alone(
    tmp_path: Path,
) -> None:
    code, stdout, out = _doctor_rehearse(tmp_path)
    for stage in STAGES:
        assert f"ok       {stage}: " in stdout, out
    assert "ok       nothing billable left in the twin's project after teardown" in stdout
    assert "rehearsal passed (" in stdout
    assert "UNMODELLED" not in out
    # the machine's own problems (no docker daemon, no gcloud login) are doctor's exit 1
    assert code == (1 if "MISSING  " in stdout else 0), out


@pytest.mark.timeout(1800)
def test_doctor_rehearse_names_the_failing_stage_and_the_unmodelled_call(
    tmp_path: Path,
) -> None:
    """kubernetes 7043372: cluster/gce/config-default.sh sets ENABLE_IP_ALIASES from
    KUBE_GCE_ENABLE_IP_ALIASES; kube-up.sh then runs create-subnetworks
    (cluster/gce/util.sh: `gcloud beta compute networks subnets create`), which the twin
    does not model, under `set -o errexit`."""
    code, stdout, out = _doctor_rehearse(tmp_path, 'KUBE_GCE_ENABLE_IP_ALIASES = "true"\n')
    assert code == 3, out
    assert "FAILED   setup: kube-up.sh failed (exited with code 97): " in stdout
    assert "UNMODELLED " in stdout
    assert "gcloud beta compute networks subnets create kubemark-500-subnet-default" in stdout
    for stage in ("build", "launch", "collect"):
        assert f"-        {stage}: not reached" in stdout
    assert "rehearsal FAILED: failed at setup, unmodelled calls (" in stdout
