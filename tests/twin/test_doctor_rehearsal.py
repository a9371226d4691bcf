"""`bisector doctor --rehearse`: what it says and exits with for each thing a rehearsal
returns, and what keeps it away from the real cloud and the user's own files.

The real 2017 scripts on the twin run in `make contract KUBE=...`
(tests/contract/test_doctor_rehearse_contract.py); here `rehearse()` is either replaced
by a stand-in returning each kind of result, or run for real on a tiny checkout whose
kube-up.sh probes for real tools and fails, so setup is as far as it gets.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import bisector.commands.doctor as doctor_command
from bisector.backends.gce import steps as gce_steps
from bisector.backends.registry import BackendInfo
from bisector.backends.resources import Resource, ResourceRecord
from bisector.commands.doctor import doctor
from bisector.config import Section
from bisector.entry import main
from bisector.exitcodes import DoctorExit
from bisector.twin import UNMODELLED_EXIT
from bisector.twin import doctor_rehearsal as doctor_rehearse
from bisector.twin.rehearse import Rehearsal
from bisector.twin.state import Home
from tests.helpers.checkout import snapshot

GCE = """[run]
backend = "gce"

[backends.gce]
project = "twin-project"
zone = "us-central1-f"
num_nodes = 6
node_size = "n1-standard-8"
kubemark_num_nodes = 500
kubemark_master_size = "n1-standard-16"
instance_prefix = "kubemark-500"
retry_attempts = 1
"""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _kube_repo(path: Path, kube_up: str = "#!/bin/sh\nexit 0\n") -> Path:
    """A git repo with the files the gce backend and the twin's `make quick-release`
    look for; its scripts are stand-ins (the real ones run under `make contract`)."""
    scripts = {
        "cluster/kube-up.sh": kube_up,
        "cluster/kube-down.sh": "#!/bin/sh\nexit 0\n",
        "test/kubemark/start-kubemark.sh": "#!/bin/sh\nexit 0\n",
        "test/kubemark/stop-kubemark.sh": "#!/bin/sh\nexit 0\n",
        "build/release.sh": "#!/bin/sh\nexit 0\n",
    }
    for rel, text in scripts.items():
        file = path / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
        file.chmod(0o755)
    _git(path, "init", "-q")
    _git(path, "add", ".")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "kube")
    return path


@pytest.fixture
def kube(tmp_path: Path) -> Path:
    return _kube_repo(tmp_path / "kube")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gce.toml"
    path.write_text(GCE)
    return path


@pytest.fixture(autouse=True)
def machine_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine checks pass (tests/commands/test_doctor.py covers them): what is
    printed and returned here is the rehearsal's."""
    monkeypatch.setattr(doctor_command, "_check_tool", lambda tool, report: None)
    monkeypatch.setattr(BackendInfo, "doctor", lambda self, section, tree=None: [])


class StandIn:
    """Replaces `rehearse()`: records what it was given and the environment it ran in,
    lets the test act inside the rehearsal, and returns the result the test builds."""

    def __init__(self, build: Any = None) -> None:
        self.build = build or (lambda home, commit: Rehearsal(home, commit, "measured"))
        self.section: Section | None = None
        self.checkout: Path | None = None
        self.home_dir: Path | None = None
        self.environ: dict[str, str] = {}
        self.heads: dict[str, str] = {}  # the checkouts' HEADs (gone once doctor returns)
        self.base_kube_up = ""
        self.kube_up = ""

    def __call__(self, section: Section, checkout: Path, home_dir: Path) -> Rehearsal:
        self.section, self.checkout, self.home_dir = section, checkout, home_dir
        self.environ = dict(os.environ)
        self.heads["checkout"] = _git(checkout, "rev-parse", "HEAD")
        self.kube_up = (checkout / "cluster" / "kube-up.sh").read_text()
        if "base_checkout" in section:
            base = Path(section.get_str("base_checkout"))
            self.heads["base"] = _git(base, "rev-parse", "HEAD")
            self.base_kube_up = (base / "cluster" / "kube-up.sh").read_text()
        home = Home(home_dir)
        home.path.mkdir(parents=True, exist_ok=True)
        result: Rehearsal = self.build(home, _git(checkout, "rev-parse", "HEAD"))
        return result


def _stand_in(monkeypatch: pytest.MonkeyPatch, build: Any = None) -> StandIn:
    stand_in = StandIn(build)
    monkeypatch.setattr(doctor_rehearse, "rehearse", stand_in)
    return stand_in


def _measured(home: Home, commit: str) -> Rehearsal:
    log = home.path / "kube-apiserver.log"
    log.write_text("I0602 13:35:52.500375 ...\n" * 10)
    calls = [{"tool": "gcloud", "argv": ["compute", "instances", "list"], "code": 0}] * 3
    return Rehearsal(home, commit, "measured", logs=[log], calls=calls)


def test_a_passing_rehearsal_says_each_stage_and_exits_0(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.READY
    out = capsys.readouterr().out
    for stage in ("setup", "build", "launch", "teardown", "close"):
        assert f"ok       {stage}: " in out
    assert "ok       collect: gcloud compute scp of the apiserver log: kube-apiserver.log (" in out
    assert "ok       nothing billable left in the twin's project after teardown" in out
    assert out.rstrip().splitlines()[-1].startswith("rehearsal passed (in ")
    assert "3 calls on the twin" in out
    assert f"at {_git(kube, 'rev-parse', 'HEAD')[:12]} (a scratch clone of its HEAD)" in out


def test_a_call_gcloud_528_refuses_fails_the_rehearsal_even_when_the_script_goes_on(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script may ignore a failed call (`|| true`); real gcloud would have done nothing."""

    def refused(home: Home, commit: str) -> Rehearsal:
        result = _measured(home, commit)
        argv = ["compute", "networks", "create", "k", "--mode=auto"]
        result.calls = [*result.calls, {"tool": "gcloud", "argv": argv, "code": 2}]
        return result

    _stand_in(monkeypatch, refused)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "REFUSED  1 gcloud call(s) that gcloud 528 refuses as a command line" in out
    assert "e.g. gcloud compute networks create k --mode=auto" in out
    assert "rehearsal FAILED: calls gcloud 528 refuses (in " in out


def test_a_failed_stage_shows_its_last_lines_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = (
        "start-kubemark.sh failed (exited with code 1): Creating kubemark master | "
        "ERROR: (gcloud) quota exceeded | !!! kube-up failed"
    )
    _stand_in(monkeypatch, lambda home, commit: Rehearsal(home, commit, "launch failed", reason))
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    lines = out.splitlines()
    at = lines.index("FAILED   launch: start-kubemark.sh failed (exited with code 1): "
                     "Creating kubemark master")  # fmt: skip
    assert lines[at + 1 : at + 4] == [
        "           ERROR: (gcloud) quota exceeded",
        "           !!! kube-up failed",
        "-        collect: not reached",
    ]
    assert "ok       setup: " in out and "ok       build: " in out
    # a launch that failed is still torn down (rehearse() runs stop-kubemark.sh after it)
    assert "ok       teardown: " in out and "ok       close: " in out
    assert "rehearsal FAILED: failed at launch (" in out
    assert "rerun with --keep" in out


def test_a_failed_setup_reaches_nothing_else(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _stand_in(monkeypatch, lambda home, commit: Rehearsal(home, commit, "setup failed", "x"))
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "FAILED   setup: x" in out
    for stage in ("build", "launch", "collect"):
        assert f"-        {stage}: not reached" in out
    for stage in ("teardown", "close"):
        assert f"-        {stage}: not run (nothing of it is recorded as up)" in out


def test_unmodelled_calls_are_listed_and_fail_the_rehearsal(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def build(home: Home, commit: str) -> Rehearsal:
        result = _measured(home, commit)
        subnets = ["compute", "networks", "subnets", "create", "k", "--project", "twin-project"]
        result.calls += [{"tool": "gcloud", "argv": subnets, "code": UNMODELLED_EXIT}] * 2
        result.calls += [{"tool": "ssh", "argv": ["host", "true"], "code": UNMODELLED_EXIT}]
        return result

    _stand_in(monkeypatch, build)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "UNMODELLED 3 call(s) the twin does not model (exit 97)" in out
    assert "           gcloud compute networks subnets create k --project twin-project  (x2)" in out
    assert "           ssh host true\n" in out
    assert "rehearsal FAILED: unmodelled calls (" in out


def test_leftovers_are_said_loudly_and_fail_the_rehearsal(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def build(home: Home, commit: str) -> Rehearsal:
        result = _measured(home, commit)
        result.leftovers = {"instances": ["kubemark-500-kubemark-master"], "disks": ["d1", "d2"]}
        return result

    _stand_in(monkeypatch, build)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert (
        "LEFT UP  after teardown the twin's project still holds instances: "
        "kubemark-500-kubemark-master; disks: d1, d2; a real project would go on billing these"
    ) in out
    assert "nothing billable left" not in out
    assert "rehearsal FAILED: left resources up (" in out


def test_a_failed_stop_kubemark_is_a_failed_teardown(
    monkeypatch: pytest.MonkeyPatch,
    kube: Path,
    config: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """GceBackend.teardown logs a failed stop-kubemark.sh and keeps its record instead of
    raising, so rehearse() says "measured": the record left behind is what tells."""

    def build(home: Home, commit: str) -> Rehearsal:
        assert stand_in.section is not None
        cfg = gce_steps.GceSettings.from_section(stand_in.section, home.path)
        ResourceRecord(home.path / "run").add(
            Resource(gce_steps.kubemark_id(cfg, 0), "gce", "kubemark master", (), ())
        )
        logging.getLogger("bisector.gce").warning(
            "stop-kubemark.sh failed (%s); run `bisector cleanup`", "ERROR: disk in use"
        )
        return _measured(home, commit)

    stand_in = _stand_in(monkeypatch, build)
    with caplog.at_level(logging.WARNING):
        assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "FAILED   teardown: stop-kubemark.sh failed: ERROR: disk in use" in out
    assert "ok       close: " in out
    assert "rehearsal FAILED: failed at teardown (" in out
    # nothing of the rehearsal is real: no advice to run `bisector cleanup` reaches the user
    assert "bisector cleanup" not in out + caplog.text


def test_rehearsal_failure_outranks_machine_problems(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        doctor_command, "_check_tool", lambda tool, report: report.bad(tool.name, "missing")
    )
    _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.PROBLEMS
    _stand_in(monkeypatch, lambda home, commit: Rehearsal(home, commit, "build failed", "x"))
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "problem(s) found" in out and "rehearsal passed" in out


def test_a_config_the_backend_cannot_read_is_not_rehearsed(
    monkeypatch: pytest.MonkeyPatch, kube: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in = _stand_in(monkeypatch)
    config = tmp_path / "bad.toml"
    config.write_text(GCE + "zoen = 'x'\n")
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "`backends.gce.zoen` is not a known setting" in out
    assert "rehearsal not run: fix the config problem above first" in out
    assert stand_in.home_dir is None


def test_uncommitted_changes_are_not_rehearsed_and_it_says_so(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kube / "cluster" / "kube-up.sh").write_text("#!/bin/sh\necho edited\n")
    stand_in = _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.READY
    assert stand_in.heads["checkout"] == _git(kube, "rev-parse", "HEAD")
    assert stand_in.kube_up == "#!/bin/sh\nexit 0\n"  # the committed script, not the edit
    assert f"note     {kube} has uncommitted changes: the rehearsal runs its HEAD" in (
        capsys.readouterr().out
    )


def test_a_placeholder_project_is_refused_before_any_script_runs(
    kube: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "placeholder.toml"
    config.write_text(GCE.replace("twin-project", "my-gcp-project"))
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "FAILED   config: " in out and "'my-gcp-project' is the example's placeholder" in out
    assert "rehearsal FAILED: the gce backend refused the config" in out


# -- what the rehearsal must not touch -------------------------------------------------


def test_the_users_checkout_cache_and_base_checkout_are_not_the_rehearsals(
    monkeypatch: pytest.MonkeyPatch, kube: Path, tmp_path: Path
) -> None:
    """The build writes _output/ and the patch is applied in the rehearsal's checkout;
    a shared build cache or base checkout would give a real run the twin's fake release."""
    base = _kube_repo(tmp_path / "base")
    cache = tmp_path / "cache"
    config = tmp_path / "gce.toml"
    config.write_text(
        GCE + f'base_checkout = "{base}"\nbuild_cache_dir = "{cache}"\nkeep_base_cluster = true\n'
    )
    before = {repo: snapshot(repo) for repo in (kube, base)}

    def build(home: Home, commit: str) -> Rehearsal:
        assert stand_in.checkout is not None and stand_in.section is not None
        for tree in (stand_in.checkout, Path(stand_in.section.get_str("base_checkout"))):
            (tree / "_output" / "release-tars").mkdir(parents=True)
            (tree / "cluster" / "kube-up.sh").write_text("#!/bin/sh\n# patched\n")
        return _measured(home, commit)

    stand_in = _stand_in(monkeypatch, build)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.READY
    assert stand_in.section is not None and stand_in.checkout is not None
    assert stand_in.home_dir is not None
    scratch = stand_in.home_dir.parent
    rehearsed_base = Path(stand_in.section.get_str("base_checkout"))
    assert stand_in.checkout.parent == scratch and rehearsed_base.parent == scratch
    assert stand_in.heads["checkout"] == _git(kube, "rev-parse", "HEAD")
    assert stand_in.section.get_str("build_cache_dir") == str(scratch / "cache")
    assert stand_in.section.get_bool("keep_base_cluster") is False  # kube-down.sh rehearsed
    assert {repo: snapshot(repo) for repo in (kube, base)} == before
    assert not cache.exists()
    assert not scratch.exists()  # removed without --keep


def test_the_users_index_is_not_rewritten_by_the_clean_tree_check(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path
) -> None:
    """`git status` refreshes the index and writes it back (a file touched since it was
    staged: new stat data); the check that the checkout is clean must not write the
    user's .git/index (git 2.39.5: --no-optional-locks leaves it alone)."""
    script = kube / "cluster" / "kube-up.sh"
    stat = script.stat()
    os.utime(script, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    index = kube / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.READY
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_base_checkout_rehearsed_at_its_own_head(
    monkeypatch: pytest.MonkeyPatch, kube: Path, tmp_path: Path
) -> None:
    base = _kube_repo(tmp_path / "base", kube_up="#!/bin/sh\necho base\n")
    config = tmp_path / "gce.toml"
    config.write_text(GCE + f'base_checkout = "{base}"\n')
    stand_in = _stand_in(monkeypatch, _measured)
    doctor(None, config, rehearse=True, repo=kube)
    assert stand_in.heads["base"] == _git(base, "rev-parse", "HEAD")
    assert stand_in.base_kube_up == "#!/bin/sh\necho base\n"


def test_real_credentials_and_tool_paths_are_out_of_reach_while_it_runs(
    monkeypatch: pytest.MonkeyPatch, kube: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gce.toml"
    config.write_text(
        GCE + '[backends.gce.env]\nPATH = "/opt/google-cloud-sdk/bin:/usr/bin:/bin"\n'
        'CLOUDSDK_CONFIG = "/root/.config/gcloud"\nKUBE_NODE_OS_DISTRIBUTION = "gci"\n'
    )
    real_home = os.environ["HOME"]
    for name, value in {
        "GOOGLE_APPLICATION_CREDENTIALS": "/secrets/sa.json",
        "CLOUDSDK_CORE_ACCOUNT": "me@example.com",
        "CLOUDSDK_CONFIG": "/home/me/.config/gcloud",
        "KUBECTL_PATH": "/usr/local/bin/kubectl",  # cluster/kubectl.sh would run it
        "KUBECONFIG": "/home/me/.kube/prod",
        "DOCKER_CONFIG": "/home/me/.docker",
        "BOTO_CONFIG": "/home/me/.boto",
    }.items():
        monkeypatch.setenv(name, value)
    stand_in = _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.READY
    assert stand_in.section is not None and stand_in.home_dir is not None
    scratch = stand_in.home_dir.parent
    env = stand_in.environ
    assert env["HOME"] == str(scratch / "home")
    assert env["TMPDIR"] == str(scratch / "tmp")
    assert env["CLOUDSDK_CONFIG"] == str(scratch / "home" / ".config" / "gcloud")
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CORE_ACCOUNT", "KUBECTL_PATH",
                 "KUBECONFIG", "DOCKER_CONFIG", "BOTO_CONFIG"):  # fmt: skip
        assert name not in env, name
    assert env["GCE_METADATA_HOST"] == env["GCE_METADATA_IP"] == "127.0.0.1:1"
    # a PATH of the config's own still finds the twin first; its CLOUDSDK_CONFIG is dropped
    scripts_env = stand_in.section.table("env").data
    assert scripts_env["PATH"] == (
        f"{stand_in.home_dir / 'bin'}{os.pathsep}/opt/google-cloud-sdk/bin:/usr/bin:/bin"
    )
    assert "CLOUDSDK_CONFIG" not in scripts_env
    assert scripts_env["KUBE_NODE_OS_DISTRIBUTION"] == "gci"
    assert "note     [backends.gce.env] CLOUDSDK_CONFIG: not passed" in capsys.readouterr().out
    # and afterwards the environment is the user's again
    assert os.environ["HOME"] == real_home
    assert os.environ["GOOGLE_APPLICATION_CREDENTIALS"] == "/secrets/sa.json"
    assert os.environ["CLOUDSDK_CONFIG"] == "/home/me/.config/gcloud"
    assert "GCE_METADATA_HOST" not in os.environ


def test_anything_written_into_the_rehearsals_home_fails_it(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def build(home: Home, commit: str) -> Rehearsal:
        # What a real gcloud leaves on every call (Google Cloud SDK 528, measured:
        # `CLOUDSDK_CONFIG=X gcloud config list` writes X/logs/<date>/<time>.log).
        logs = Path(os.environ["CLOUDSDK_CONFIG"]) / "logs" / "2026.11.30"
        logs.mkdir(parents=True)
        (logs / "14.05.39.715103.log").write_text("gcloud.compute.instances.create\n")
        return _measured(home, commit)

    _stand_in(monkeypatch, build)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    out = capsys.readouterr().out
    assert "REAL TOOL? the rehearsal's empty HOME now holds " in out
    assert ".config/gcloud/logs/2026.11.30/14.05.39.715103.log" in out
    assert out.rstrip().splitlines()[-2].startswith("rehearsal FAILED")


def test_keep_leaves_the_directory_and_says_where(
    monkeypatch: pytest.MonkeyPatch, kube: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in = _stand_in(monkeypatch, _measured)
    assert doctor(None, config, rehearse=True, repo=kube, keep=True) == DoctorExit.READY
    assert stand_in.home_dir is not None
    scratch = stand_in.home_dir.parent
    try:
        assert (scratch / "kubernetes" / "cluster" / "kube-up.sh").is_file()
        assert f"kept     {scratch}: twin/calls.jsonl" in capsys.readouterr().out
    finally:
        subprocess.run(["rm", "-rf", str(scratch)], check=True)


# -- the real rehearse(), on a checkout whose kube-up.sh looks for the real tools -------------

_PROBE = """#!/bin/sh
# What a script could do to reach the real tools: PATH lookups, KUBECTL_PATH as
# cluster/kubectl.sh honours it (kubernetes 7043372), the credentials' env.
gcloud config list project
gsutil version
docker version
"${KUBECTL_PATH:-kubectl}" version
echo "HOME=$HOME GAC=${GOOGLE_APPLICATION_CREDENTIALS:-unset}" > "$PROBE_OUT"
echo "kube-up.sh: a stand-in stops here" >&2
exit 1
"""


def _real_tools(where: Path, marker: Path) -> Path:
    """Programs named like the real cloud tools that note any call in `marker`, the way
    the real gcloud leaves a log under $CLOUDSDK_CONFIG/logs."""
    where.mkdir()
    for tool in ("gcloud", "gsutil", "docker", "kubectl", "curl", "bq"):
        program = where / tool
        program.write_text(
            f'#!/bin/sh\necho "{tool} $*" >> "{marker}"\n'
            'mkdir -p "${CLOUDSDK_CONFIG:-$HOME/.config/gcloud}/logs" && '
            'echo "$*" > "${CLOUDSDK_CONFIG:-$HOME/.config/gcloud}/logs/call.log"\n'
        )
        program.chmod(0o755)
    return where


def test_the_real_rehearse_never_reaches_a_real_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker, probe = tmp_path / "real-tool-calls", tmp_path / "probe"
    real = _real_tools(tmp_path / "real-bin", marker)
    kube = _kube_repo(tmp_path / "kube", kube_up=_PROBE)
    config = tmp_path / "gce.toml"
    config.write_text(
        GCE + f'[backends.gce.env]\nPATH = "{real}{os.pathsep}{os.environ["PATH"]}"\n'
        f'PROBE_OUT = "{probe}"\n'
    )
    monkeypatch.setenv("PATH", f"{real}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KUBECTL_PATH", str(real / "kubectl"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/secrets/sa.json")
    code = doctor(None, config, rehearse=True, repo=kube, keep=True)
    out = capsys.readouterr().out
    scratch = Path(out.split("kept     ")[1].split(":")[0])
    try:
        assert not marker.exists(), marker.read_text()
        assert probe.read_text() == f"HOME={scratch / 'home'} GAC=unset\n"
        calls = Home(scratch / "twin").calls()
        probe_calls = [c for c in calls if c["cwd"] == str(scratch / "kubernetes")]
        # (the preflight's and the adaptations' gcloud/gsutil calls come first, elsewhere)
        assert [c["tool"] for c in probe_calls if c["tool"] != "make"][-4:] == [
            "gcloud",
            "gsutil",
            "docker",
            "kubectl",
        ]
        assert code == DoctorExit.REHEARSAL_FAILED
        assert "FAILED   setup: kube-up.sh failed (exited with code 1): " in out
        assert "kube-up.sh: a stand-in stops here" in out
        assert "REAL TOOL?" not in out
    finally:
        subprocess.run(["rm", "-rf", str(scratch)], check=True)


@pytest.mark.slow
def test_a_real_tool_called_by_its_own_path_is_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "real-tool-calls"
    real = _real_tools(tmp_path / "real-bin", marker)
    kube_up = f"#!/bin/sh\n{real / 'gcloud'} compute instances list\nexit 0\n"
    kube = _kube_repo(tmp_path / "kube", kube_up=kube_up)
    config = tmp_path / "gce.toml"
    config.write_text(GCE)
    assert doctor(None, config, rehearse=True, repo=kube) == DoctorExit.REHEARSAL_FAILED
    assert marker.read_text() == "gcloud compute instances list\n"  # the fence cannot stop it
    out = capsys.readouterr().out
    assert "REAL TOOL? the rehearsal's empty HOME now holds .config/gcloud/logs/call.log" in out


# -- bad input: one line, exit 2 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--backend", "kind"], "--rehearse exists for the gce backend only (the backend here "
         "is kind)"),
        ([], "--rehearse exists for the gce backend only (the backend here is sim (the default))"),
        (["--backend", "gce"], "--rehearse needs --config FILE: the gce config to rehearse"),
    ],
)  # fmt: skip
def test_rehearse_without_a_gce_config_is_one_line_exit_2(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--rehearse", *args])
    assert info.value.code == DoctorExit.USAGE
    captured = capsys.readouterr()
    assert captured.err.startswith(f"bisector: error: {line}")
    assert len(captured.err.splitlines()) == 1 and "Traceback" not in captured.err
    assert captured.out == ""  # said before any check runs


def test_keep_without_rehearse_is_one_line_exit_2(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (--repo alone is the checkout doctor checks: procs reads the Go its tree needs there)
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config), "--keep"])
    assert info.value.code == DoctorExit.USAGE
    assert capsys.readouterr().err == (
        "bisector: error: --keep is an option of --rehearse; add --rehearse\n"
    )


def test_a_local_config_says_rehearsal_is_for_gce_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "local.toml"
    config.write_text('[run]\nbackend = "local"\n[backends.local]\nlaunch = "x"\ncollect = "y"\n')
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config), "--rehearse"])
    assert info.value.code == DoctorExit.USAGE
    assert "only (the backend here is local)" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["not a repository", "not kubernetes"])
def test_a_repo_that_cannot_be_rehearsed_is_one_line_exit_2(
    what: str, tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    if what == "not kubernetes":
        (repo / "README").write_text("x\n")
        _git(repo, "init", "-q")
        _git(repo, "add", ".")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", str(config), "--rehearse", "--repo", str(repo)])
    assert info.value.code == DoctorExit.USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"bisector: error: --repo {repo}")
    if what == "not kubernetes":
        assert "has no cluster/kube-up.sh: it must be a kubernetes checkout" in err
    else:
        assert "--rehearse needs a kubernetes git checkout" in err


def test_the_help_lists_the_rehearsal_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "3 the --rehearse run on the GCE twin did not pass" in text
    assert "--rehearse" in text and "--repo DIR" in text and "--keep" in text
