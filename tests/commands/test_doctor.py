"""`bisector doctor`: tools, credentials and config, through the fake proc."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.base import Backend, BackendContext
from bisector.backends.registry import BackendInfo
from bisector.commands.doctor import doctor
from bisector.config import load_config
from bisector.errors import BisectorError
from bisector.settings import CHECK_DIR, RunFlags, RunSettings
from tests.helpers.doctor import all_present, gce_home
from tests.helpers.fake_proc import FakeProc


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeProc:
    gce_home(monkeypatch, tmp_path / "home")
    return all_present(FakeProc.install(monkeypatch))


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
        "gcloud",  # version --format=json: alpha, beta, core
        "python",  # distutils
    ]
    assert fake.calls[2].argv == ["docker", "version", "--format", "{{.Server.Version}}"]
    out = capsys.readouterr().out
    assert "ok       gcloud credentials: me@example.com" in out
    assert "my-project (gcloud default" in out
    assert "ok       docker auth to gcr.io: gcr.io, us.gcr.io, eu.gcr.io, asia.gcr.io" in out
    assert "ok       gcloud ssh key: " in out
    assert "ok       gcloud components: alpha, beta, core" in out
    assert "ok       python for the 2017 scripts: `python` has distutils" in out
    assert out.rstrip().endswith("ready")


def test_gce_missing_beta_component_or_distutils(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    """cluster/common.sh update-or-verify-gcloud (kubernetes 7043372): kube-up.sh checks
    `gcloud version --format=json` for alpha, beta and core with python's distutils."""
    fake.on("gcloud version --format=json", stdout='{"core": "2025.06.20"}', first=True)
    fake.on("python -c", code=1, stderr="ModuleNotFoundError: No module named 'distutils'",
            first=True)  # fmt: skip
    assert doctor("gce", None) == 1
    out = capsys.readouterr().out
    assert "MISSING  gcloud components: kube-up.sh needs alpha, beta: run " in out
    assert "`gcloud components install alpha beta`" in out
    assert (
        "MISSING  python for the 2017 scripts: `python -c 'from distutils import version'`" in out
    )


def test_gce_without_docker_auth_or_ssh_key_says_what_to_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # start-kubemark.sh (kubernetes 7043372, cluster/images/kubemark/Makefile) pushes with
    # `gcloud docker -- push ${REGISTRY}/${PROJECT}/kubemark`; slot N pushes to host N.
    gce_home(monkeypatch, tmp_path / "home", key=False, helpers=("gcr.io",))
    all_present(FakeProc.install(monkeypatch))
    assert doctor("gce", None) == 1
    out = capsys.readouterr().out
    assert (
        "MISSING  docker auth to gcr.io: no credential helper for us.gcr.io, eu.gcr.io, "
        "asia.gcr.io; run `gcloud auth configure-docker gcr.io,us.gcr.io,eu.gcr.io,asia.gcr.io`"
    ) in out
    assert "MISSING  gcloud ssh key: " in out and "ssh-keygen -t rsa -N ''" in out
    assert "2 problem(s) found" in out


def test_placeholder_project_is_a_problem(
    fake: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[run]\nbackend = "gce"\n[backends.gce]\nproject = "my-gcp-project"\n')
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    assert "MISSING  gcp project: 'my-gcp-project' is the example's placeholder" in out
    assert "1 problem(s) found" in out


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
        # The gce configs' only problem is the placeholder project the user must replace.
        problems = 1 if backend == "gce" else 0
        assert doctor(None, root / name) == (1 if problems else 0), capsys.readouterr().out
        out = capsys.readouterr().out
        # The backend comes from the config's [run] table, as `bisector run` reads it.
        assert f"ok       config: [backends.{backend}] in {root / name}" in out
        if problems:
            assert "1 problem(s) found" in out and "'my-gcp-project' is the example's" in out


def _contexts_built(monkeypatch: pytest.MonkeyPatch) -> list[BackendContext]:
    """Every context a backend is built from, in order."""
    built: list[BackendContext] = []
    create = BackendInfo.create

    def recording(info: BackendInfo, context: BackendContext) -> Backend:
        built.append(context)
        return create(info, context)

    monkeypatch.setattr(BackendInfo, "create", recording)
    return built


@pytest.mark.parametrize(("metric", "looks"), [("conflicts", 10.0), ("conflicts_per_min", None)])
def test_the_backend_is_built_from_the_context_a_run_would_build_it_from(
    fake: FakeProc,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    metric: str,
    looks: float | None,
) -> None:
    # doctor handed the backend its table alone: no warmup, no looks, no seed, so a
    # backend's check of them (procs' of `check_every`) never fired here.
    config = tmp_path / "c.toml"
    config.write_text(
        f'[run]\nbackend = "sim"\nmetric = "{metric}"\nwarmup = "1m"\ncheck_every = "10s"\n'
        'seed = 7\n[backends.procs]\nnode_status_period = "1s"\n'
    )
    built = _contexts_built(monkeypatch)
    doctor("procs", config)  # --backend wins over [run] backend, as for `bisector run`
    settings = RunSettings.from_config(
        load_config(config), good="a", bad="b", flags=RunFlags(backend="procs")
    )
    assert built == [settings.backend_context(CHECK_DIR)]
    assert (built[0].warmup_s, built[0].check_every_s, built[0].seed) == (60.0, looks, 7)
    assert built[0].section.path == "backends.procs"  # the checked backend's table


def test_a_look_the_backend_cannot_judge_is_a_problem_as_in_the_run(
    fake: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `bisector run` refuses this config (procs: no look before the warmup's end), doctor
    # said `ok config` for it.
    config = tmp_path / "c.toml"
    config.write_text('[run]\nbackend = "procs"\nwarmup = "1m"\ncheck_every = "2m"\n')
    assert doctor(None, config) == 1
    out = capsys.readouterr().out
    assert (
        f"MISSING  config: {config}: key `run.check_every` = 120s is not shorter than the "
        "warmup (1m00s): no look would come before the warmup's end" in out
    ), out
    assert "ok       config: [backends.procs]" not in out


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


# Issue 22, point 3: `doctor` with no arguments exited 1 on a machine that just ran the
# sim demo (no docker, no kind): it checked every backend's tools.
def test_no_arguments_checks_the_default_backend_and_lists_the_others(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeProc.install(monkeypatch)
    fake.on("git --version", stdout="git version 2.43.0\n")
    missing = proc.CommandError(["x"], None, "", "", "could not start: not found")
    for tool in ("docker", "kind", "kubectl", "gcloud", "gsutil", "make", "python"):
        fake.on(tool, raises=missing)  # a machine with git only
    assert doctor(None, None) == 0
    out = capsys.readouterr().out
    assert out.startswith("checking the sim backend (the default without --config;")
    assert "ok       git: git version 2.43.0" in out and "MISSING" not in out
    assert [c.argv[0] for c in fake.calls] == ["git"]  # nothing else was run
    listed = out.split("other backends, not checked (not problems):")[1]
    from bisector.backends.registry import BACKENDS

    for name in BACKENDS:  # every other backend of the registry, with what it would check
        if name != "sim":
            assert f"\n  {name} " in listed
    assert "docker, kind, kubectl, and its own checks" in listed


def test_a_backend_added_to_the_registry_is_listed_with_nothing_in_doctor(
    fake: FakeProc, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bisector.backends import registry

    extra = registry.BackendInfo(
        "procs", "a real control plane", "local", "LocalBackend", ("git", "make"),
        "bisector.backends.local_doctor:check",
    )  # fmt: skip
    monkeypatch.setitem(registry.BACKENDS, "procs", extra)
    assert doctor(None, None, as_json=True) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert result["backend"] == "sim" and result["chosen_by"] == "default"
    assert {
        "backend": "procs", "summary": "a real control plane", "tools": ["git", "make"],
        "own_checks": True, "command": "bisector doctor --backend procs",
    } in result["available"]  # fmt: skip


def test_json_says_each_check_and_whether_ready(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    fake.on("docker version", code=1, stderr="Cannot connect to the Docker daemon", first=True)
    assert doctor("kind", None, as_json=True) == 1
    result = json.loads(capsys.readouterr().out)  # nothing but the JSON on stdout
    assert result["backend"] == "kind" and result["chosen_by"] == "--backend"
    assert result["ready"] is False and result["problems"] == 1
    assert result["available"] == [] and result["rehearsal"] is None
    docker = next(c for c in result["checks"] if c["what"] == "docker")
    assert docker["ok"] is False and "start the daemon" in docker["detail"]
    assert {"ok", "what", "detail"} == set(docker)


@pytest.mark.parametrize("built", [True, False])
def test_which_log_scanner_runs_is_said_and_never_a_problem(
    fake: FakeProc,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    built: bool,
) -> None:
    from bisector.logs import glogscan

    if not built:
        monkeypatch.setattr(glogscan, "_compiled", None)
    elif not glogscan.available():
        pytest.skip("the C extension is not built here (tests/logs/test_glogscan.py says why)")
    assert doctor("sim", None) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "log scanner" in line)
    assert line.startswith("ok ")
    assert ("compiled" in line) == built
    assert ("apt-get install gcc python3-dev" in line) == (not built)
