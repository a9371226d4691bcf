"""`bisector doctor --config NIGHTLY.toml` checks each hunting job's own backend on its own
checkout; it read a nightly config as a run's config and refused `[nightly]` as unknown."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from bisector.entry import main
from bisector.exitcodes import DoctorExit

REPO = Path(__file__).resolve().parents[2]


def _nightly(tmp_path: Path, job_tables: str, repo: Path | None = None) -> Path:
    """Two jobs, the second hunting on `repo` (default: a fresh checkout in tmp_path)."""
    if repo is None:
        git.Repo.init(tmp_path)
    repo = repo or tmp_path
    config = tmp_path / "nightly.toml"
    config.write_text(
        f'[nightly]\nstate = "{tmp_path / "state"}"\n\n'
        '[[nightly.jobs]]\nname = "watched"\njob = "ci-a"\n\n'
        f'[[nightly.jobs]]\nname = "hunted"\njob = "ci-b"\nrepo = "{repo}"\n'
        f"{job_tables}"
    )
    return config


def test_each_hunting_job_is_checked_with_its_own_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _nightly(
        tmp_path,
        '[nightly.jobs.run]\nbackend = "local"\n'
        '[nightly.jobs.backends.local]\nlaunch = "true"\ncollect = "true"\n',
    )
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config)])
    out = capsys.readouterr().out
    assert "not a known table" not in out
    assert "job watched: reports its regressions" in out
    assert f"job hunted: the local backend, on {tmp_path}" in out
    assert out.rstrip().endswith("ready") and info.value.code == DoctorExit.READY


def test_a_jobs_missing_command_is_a_problem_named_under_its_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _nightly(
        tmp_path,
        '[nightly.jobs.run]\nbackend = "local"\n'
        '[nightly.jobs.backends.local]\nlaunch = "no-such-command-xyz"\ncollect = "true"\n',
    )
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["backend"] == "nightly" and not result["ready"]
    assert any("no-such-command-xyz" in c["detail"] for c in result["checks"] if not c["ok"])
    assert info.value.code == DoctorExit.PROBLEMS


@pytest.mark.slow
def test_the_shipped_nightly_config_is_read_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--config", str(REPO / "configs" / "nightly.toml")])
    out = capsys.readouterr().out
    assert "not a known table" not in out
    assert "job kubemark-5000: the gce backend, on /src/kubernetes" in out


def test_backend_options_do_not_apply_to_a_nightly_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _nightly(tmp_path, "")
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config), "--backend", "procs"])
    assert info.value.code == DoctorExit.USAGE
    err = capsys.readouterr().err
    assert "is a nightly config" in err and len(err.splitlines()) == 1


def test_a_hunting_jobs_repo_that_is_no_checkout_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor said `ready` for a job whose repo did not exist; its hunt failed at night."""
    missing = tmp_path / "no" / "kubernetes"
    config = _nightly(tmp_path, '[nightly.jobs.run]\nbackend = "sim"\nwarmup = "1m"\n', missing)
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config)])
    out = capsys.readouterr().out
    # The fix is the job's `repo` key: --repo does not change a nightly job's checkout.
    assert f"key `nightly.jobs[1].repo` = '{missing}' does not exist" in out
    assert "set that key to the path of a checkout" in out and "or pass --repo" not in out
    assert "ready" not in out.splitlines()[-1] and info.value.code == DoctorExit.PROBLEMS
