"""`bisector doctor`: tools, credentials and config, through the fake proc."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.commands.doctor import doctor
from bisector.errors import BisectorError
from tests.helpers.fake_proc import FakeProc


def _all_present(fake: FakeProc) -> FakeProc:
    fake.on("git --version", stdout="git version 2.43.0\n")
    fake.on("gcloud --version", stdout="Google Cloud SDK 480.0.0\n")
    fake.on("gcloud auth list", stdout="me@example.com\n")
    fake.on("gcloud config get-value project", stdout="my-project\n")
    fake.on("kind version", stdout="kind v0.23.0 go1.22 linux/amd64\n")
    return fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    return _all_present(FakeProc.install(monkeypatch))


def test_gce_ready(fake: FakeProc, capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor("gce", None) == 0
    assert [c.argv[0] for c in fake.calls] == [
        "git",
        "make",
        "docker",
        "gcloud",
        "gsutil",  # start-kubemark.sh copies with gsutil (issue 13)
        "python",  # the 2017 scripts call `python`
        "gcloud",
        "gcloud",
    ]
    assert fake.calls[2].argv == ["docker", "version", "--format", "{{.Server.Version}}"]
    out = capsys.readouterr().out
    assert "ok       gcloud credentials: me@example.com" in out
    assert "my-project (gcloud default" in out
    assert out.rstrip().endswith("ready")


def test_missing_tool_says_what_to_install_and_exits_1(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.on("kind version", raises=proc.CommandError(["kind"], None, "", "", "could not start: x"),
            first=True)  # fmt: skip
    assert doctor("kind", None) == 1
    out = capsys.readouterr().out
    assert (
        "MISSING  kind: not found on PATH; install kind >= v0.11: https://kind.sigs.k8s.io" in out
    )
    assert "1 problem(s) found" in out
    assert "gcloud" not in " ".join(fake.lines)  # kind needs no cloud credentials


def test_docker_daemon_down_is_a_problem(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.on("docker version", code=1, stderr="Cannot connect to the Docker daemon", first=True)
    assert doctor("kind", None) == 1
    assert "start the daemon" in capsys.readouterr().out


def test_no_gcloud_account_and_no_project(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.on("gcloud auth list", stdout="", first=True)
    fake.on("gcloud config get-value project", stdout="(unset)\n", first=True)
    assert doctor("gce", None) == 1
    out = capsys.readouterr().out
    assert "run `gcloud auth login`" in out
    assert "set `project` in [backends.gce]" in out


def test_config_is_validated(
    fake: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[run]\nbackend = "gce"\n[backends.gce]\nproject = "p"\nzoen = "x"\n')
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    assert "MISSING  config: " in out and "`backends.gce.zoen` is not a known setting" in out
    assert "p (from the config)" in out


def test_shipped_configs_pass(fake: FakeProc, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2] / "configs"
    for name, backend in (
        ("gce-kubemark-5000.toml", "gce"),
        ("gce-kubemark-500.toml", "gce"),
        ("kind-kubemark.toml", "kind"),
    ):
        assert doctor(None, root / name) == 0, capsys.readouterr().out
        # The backend comes from the config's [run] table, as `bisector run` reads it.
        assert f"ok       config: [backends.{backend}] in {root / name}" in capsys.readouterr().out


def test_unknown_backend_is_a_usage_error(fake: FakeProc) -> None:
    with pytest.raises(BisectorError, match="unknown backend 'gke'"):
        doctor("gke", None)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[run]\nbackend = "local"\n[backends.local]\nlaunch = 3\ncollect = "x"\n', "launch"),
        ('[run]\nbackend = "gce"\nthreshold = nan\n', "run.threshold"),
        ('[run]\nbackend = "gce"\nrepeats = "three"\n', "run.repeats"),
        ('[run]\nbackend = "gce"\n[metrics.foo]\nverb = 3\n', "metrics.foo.verb"),
    ],
)
def test_run_and_local_config_errors_are_problems(
    fake: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    assert "MISSING  config: " in out and needle in out


def test_local_commands_that_cannot_start_are_problems(
    fake: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "up.sh"
    script.write_text("#!/bin/sh\n")  # exists, not executable
    config = tmp_path / "local.toml"
    config.write_text(
        '[run]\nbackend = "local"\n[backends.local]\nlaunch = "/nonexistent --fast"\n'
        f'collect = "cp x $BISECTOR_LOG"\nbuild = "./hack/build.sh"\nteardown = "{script}"\n'
    )
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    assert "MISSING  [backends.local] launch: /nonexistent does not exist" in out
    assert f"MISSING  [backends.local] teardown: {script} is not executable" in out
    assert "ok       [backends.local] build: ./hack/build.sh (relative to each" in out
    assert "2 problem(s) found" in out
