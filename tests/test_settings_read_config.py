"""Every command that reads a run config checks all of it as `bisector run` does
(settings.read_config): `score --config` with a misspelt key in [run] exited 0 and
scored with the defaults, while `run` refused the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.entry import main
from tests.helpers.repo import build_repo

# `warmpu`: a typo `run` refuses (its warmup would silently be the default).
MISSPELT = '[run]\nbackend = "sim"\nwarmpu = "2m"\n'
NEEDLE = "key `run.warmpu` is not a known setting"
SAMPLE_LOG = Path(__file__).resolve().parents[1] / "bisector" / "data" / "sample-kube-apiserver.log"


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[object, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code, capsys.readouterr().err


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "bisector.toml"
    path.write_text(MISSPELT)
    return path


def test_run_refuses_the_misspelt_key(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [1, 2, 3])
    argv = ["run", "--repo", str(built.path), "--config", str(config)]
    argv += ["--good", built.mainline[0], "--bad", built.mainline[-1], "--dry-run"]
    code, err = _error(capsys, argv)
    assert code == 2 and NEEDLE in err and err.count("\n") == 1


def test_score_refuses_it_with_git_bisect_runs_stop_code(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text("")
    code, err = _error(capsys, ["score", str(log), "--config", str(config)])
    assert code == 128  # a config mistake stops git bisect run; it marks nothing
    assert NEEDLE in err and err.count("\n") == 1


def test_history_refuses_it_before_reading_any_ci_run(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bisector.ci import gcs

    def no_network() -> object:
        raise AssertionError("history read GCS before checking its config")

    monkeypatch.setattr(gcs, "client", no_network)
    argv = ["history", "--job", "ci-kubernetes-e2e-gce-scale-performance-100"]
    code, err = _error(capsys, [*argv, "--last", "3", "--config", str(config)])
    assert code == 2 and NEEDLE in err and err.count("\n") == 1


def test_doctor_says_it_as_a_problem(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config)])
    assert info.value.code == 1
    assert NEEDLE in capsys.readouterr().out


def test_a_backend_table_is_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The chosen backend's table, built as the run builds it: a typo there is refused."""
    config = tmp_path / "bisector.toml"
    config.write_text('[run]\nbackend = "sim"\n\n[backends.sim]\nnodez = 10\n')
    log = tmp_path / "kube-apiserver.log"
    log.write_text("")
    code, err = _error(capsys, ["score", str(log), "--config", str(config)])
    assert code == 128 and "backends.sim.nodez" in err


def test_a_config_run_accepts_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bisector.toml"
    config.write_text('[run]\nbackend = "sim"\nwarmup = "2m"\n')
    code, _ = _error(capsys, ["score", str(SAMPLE_LOG), "--config", str(config)])
    assert code == 0  # no --threshold: the scores only


def test_doctor_checks_the_table_of_a_backend_it_does_not_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor builds most backends to check their table; the sim's it did not, so a typo
    there read `ready` while `run` refused it."""
    config = tmp_path / "bisector.toml"
    config.write_text('[run]\nbackend = "sim"\n\n[backends.sim]\nnodez = 10\n')
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config)])
    assert info.value.code == 1
    assert "backends.sim.nodez" in capsys.readouterr().out


# The executor's table is the config's too: `run --dry-run` and doctor refused a misspelt
# key in [executor.kubernetes] while `score --config` read the same file and scored.
EXECUTOR_MISSPELT = (
    '[run]\nbackend = "sim"\nexecutor = "kubernetes"\n'
    '[executor.kubernetes]\nimage = "localhost/bisector:dev"\ntimeout = "soon"\n'
)
EXECUTOR_NEEDLE = "key `executor.kubernetes.timeout` is not a known setting"


def test_score_refuses_a_misspelt_executor_key_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bisector.toml"
    config.write_text(EXECUTOR_MISSPELT)
    log = tmp_path / "kube-apiserver.log"
    log.write_text("")
    code, err = _error(capsys, ["score", str(log), "--config", str(config), "--threshold", "5"])
    assert code == 128 and EXECUTOR_NEEDLE in err and err.count("\n") == 1
    built = build_repo(tmp_path / "repo", [1, 2, 3])
    argv = ["run", "--repo", str(built.path), "--config", str(config)]
    argv += ["--good", built.mainline[0], "--bad", built.mainline[-1], "--dry-run"]
    code, err = _error(capsys, argv)
    assert code == 2 and EXECUTOR_NEEDLE in err
